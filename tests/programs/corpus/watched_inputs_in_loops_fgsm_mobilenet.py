"""An adversarial example by the fast gradient sign method against a frozen MobileNetV2: the gradient of the loss with respect to the input image, eagerly, and the image moved by its sign at several epsilons.

Pattern: TensorFlow tutorial "Adversarial example using FGSM" (MobileNetV2, model.trainable = False, create_adversarial_pattern: tape.watch(input_image), CategoricalCrossentropy, tf.sign(gradient))
Family: watched inputs in loops
"""


import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: the truth run draws the same numbers

model = tf.keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, include_top=True, weights=None)
model.trainable = False
loss_object = tf.keras.losses.CategoricalCrossentropy()

rng = np.random.default_rng(0)
image = tf.convert_to_tensor(rng.random((1, 96, 96, 3), dtype=np.float32) * 2 - 1)
label = tf.one_hot(208, 1000)[None]


def create_adversarial_pattern(input_image, input_label):
    with tf.GradientTape() as tape:
        tape.watch(input_image)
        prediction = model(input_image)
        loss = loss_object(input_label, prediction)
    gradient = tape.gradient(loss, input_image)
    return tf.sign(gradient)


if __name__ == "__main__":
    perturbations = create_adversarial_pattern(image, label)
    for eps in (0, 0.01, 0.1, 0.15):
        adv_x = tf.clip_by_value(image + eps * perturbations, -1, 1)
        print(eps, float(tf.reduce_max(model(adv_x))))
