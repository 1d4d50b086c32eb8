"""Class-model feature visualisation: after training a small CNN with fit, an input tf.Variable (sigmoid-parameterised image with random jitter) is optimised eagerly to maximise one class logit of the frozen classifier.

Pattern: Simonyan et al. 2014 class model visualisation / Lucid-style activation maximisation in TF2 (frozen classifier, learned input variable, random jitter with tf.roll as the only regulariser, Adam on [input_var])
Family: trained image variable
Bug: the logits are taken with `classifier.predict(...)` inside the tape; predict returns a numpy array, so the loss is not recorded and `input_var` gets a None gradient (Keras then raises "No gradients provided")
Step: 5
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--steps", type=int, default=20)
args = parser.parse_args()

TARGET_CLASS = 2
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
x_train = rng.uniform(0, 1, size=(128, 28, 28, 1)).astype("float32")
y_train = np.argmax(x_train.reshape(128, 4, 196).mean(axis=2), axis=1).astype("int32")

classifier = tf.keras.Sequential([
    tf.keras.Input((28, 28, 1)),
    tf.keras.layers.Conv2D(8, 3, activation="relu"),
    tf.keras.layers.MaxPooling2D(),
    tf.keras.layers.Conv2D(16, 3, activation="relu"),
    tf.keras.layers.GlobalAveragePooling2D(),
    tf.keras.layers.Dense(4),
])
classifier.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
classifier.fit(x_train, y_train, batch_size=32, epochs=1, verbose=0)  # 4 training steps
classifier.trainable = False

input_var = tf.Variable(0.01 * rng.normal(size=(1, 28, 28, 1)).astype("float32"), name="input_var")
optimizer = tf.keras.optimizers.Adam(learning_rate=0.05)

for step in range(args.steps):
    shift = rng.integers(-2, 3, size=2)
    with tf.GradientTape() as tape:
        image = tf.sigmoid(input_var)
        jittered = tf.roll(image, shift=shift, axis=[1, 2])
        logits = classifier.predict(jittered, verbose=0) if args.bug else classifier(jittered, training=False)
        loss = -tf.reduce_mean(logits[:, TARGET_CLASS])
    grads = tape.gradient(loss, [input_var])
    optimizer.apply_gradients(zip(grads, [input_var]))
    if step % 5 == 0:
        print(f"step {step}: class logit {float(logits[0, TARGET_CLASS]):.4f}")
