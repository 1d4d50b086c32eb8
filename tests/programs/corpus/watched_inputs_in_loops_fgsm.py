"""A small CNN classifier trained with fit on synthetic 28x28 images, then attacked eagerly with FGSM at several epsilons.

Pattern: TensorFlow tutorial "Adversarial example using FGSM" (create_adversarial_pattern: tape.watch(input_image), loss_object, tf.sign(gradient); loop over epsilons)
Family: watched inputs in loops
Bug: `tape.watch(input_image)` watches the tensor, but the model is called on the original numpy batch (`model(images)`), which becomes a new tensor: the gradient w.r.t. `input_image` is None (tf.sign then fails)
Step: 5
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
args = parser.parse_args()

rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
x_train = rng.uniform(0, 1, size=(128, 28, 28, 1)).astype("float32")
y_train = (x_train[:, :14].mean(axis=(1, 2, 3)) > x_train[:, 14:].mean(axis=(1, 2, 3))).astype("int32")

model = tf.keras.Sequential([
    tf.keras.Input((28, 28, 1)),
    tf.keras.layers.Conv2D(8, 3, activation="relu"),
    tf.keras.layers.MaxPooling2D(),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(2),
])
model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, batch_size=32, epochs=1, verbose=0)  # 4 training steps

loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def create_adversarial_pattern(images, labels):
    input_image = tf.convert_to_tensor(images)
    with tf.GradientTape() as tape:
        tape.watch(input_image)
        prediction = model(images if args.bug else input_image)
        loss = loss_object(labels, prediction)
    gradient = tape.gradient(loss, input_image)
    return tf.sign(gradient)


images, labels = x_train[:16], y_train[:16]
perturbations = create_adversarial_pattern(images, labels)
for eps in [0.0, 0.01, 0.1, 0.15]:
    adv_x = tf.clip_by_value(images + eps * perturbations, 0, 1)
    accuracy = np.mean(np.argmax(model(adv_x), axis=1) == labels)
    print(f"epsilon {eps:.2f}: accuracy {accuracy:.3f}")
