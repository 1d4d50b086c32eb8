"""A tf.cond whose branch is not taken at these values: the variable used only
in that branch gets a zero gradient inside tf.function (None when run eagerly)."""

import tensorflow as tf

x = tf.constant([1.0, 2.0, 3.0])
w = tf.Variable(0.5, name="w")
fallback = tf.Variable(2.0, name="fallback")


def loss():
    return tf.cond(tf.reduce_sum(x) > 0.0,
                   lambda: tf.reduce_sum(x * w),
                   lambda: tf.reduce_sum(x * fallback))
