"""A healthy model: ResNet50 (random weights), one training step's loss."""

import numpy as np
import tensorflow as tf

model = tf.keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3), classes=10)
images = np.random.default_rng(0).random((1, 64, 64, 3), dtype=np.float32)
labels = np.array([3])


def loss():
    logits = model(images, training=True)
    return tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, logits))
