"""A trainable variable that the loss never reads."""

import tensorflow as tf

used = tf.Variable(1.0, name="used")
forgotten = tf.Variable(2.0, name="forgotten")


def loss():
    return tf.square(used - 3.0)
