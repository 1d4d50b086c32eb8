"""An op with no registered gradient: area resizing (ResizeArea)."""

import tensorflow as tf

image = tf.Variable(tf.random.stateless_uniform([1, 8, 8, 3], seed=[1, 2]), name="image")


def loss():
    small = tf.image.resize(image, [4, 4], method="area")
    return tf.reduce_mean(tf.square(small))
