"""An adversarial example by the fast gradient sign method, as TensorFlow's FGSM tutorial
makes it: a MobileNetV2 classifier (``weights=None`` here, so nothing is downloaded, and
frozen), the gradient of the loss with respect to the input image, eagerly, and the image
moved by its sign. Used by tests/bench/bench_program.py; nothing here knows about tfviz.
"""

import numpy as np
import tensorflow as tf

model = tf.keras.applications.MobileNetV2(include_top=True, weights=None)
model.trainable = False
loss_object = tf.keras.losses.CategoricalCrossentropy()

rng = np.random.default_rng(0)
image = tf.convert_to_tensor(rng.random((1, 224, 224, 3), dtype=np.float32) * 2 - 1)
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
