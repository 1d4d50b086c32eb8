"""sqrt at zero: the loss is finite but its gradient is infinite."""

import tensorflow as tf

w = tf.Variable([0.0, 4.0], name="w")


def loss():
    return tf.reduce_sum(tf.sqrt(w))
