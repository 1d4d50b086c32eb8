"""A value that reaches the loss only through a variable assignment."""

import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")
buffer = tf.Variable([0.0, 0.0], trainable=False, name="buffer")


@tf.function
def loss():
    buffer.assign(w * 2.0)
    return tf.reduce_sum(buffer * 3.0)
