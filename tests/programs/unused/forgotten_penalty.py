"""A ``loss()`` that computes a weight penalty and forgets to add it."""

import tensorflow as tf

w = tf.Variable([[1.0, -2.0], [0.5, 3.0]], name="w")
scale = tf.Variable(2.0, name="scale")
x = tf.constant([[1.0, 2.0]])


def loss():
    fit = tf.reduce_mean(tf.square(x @ w - 1.0))
    penalty = 1e-2 * tf.reduce_sum(tf.square(scale))
    return fit
