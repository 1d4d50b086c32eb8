"""A frozen copy made at import: the scaled weight is computed once."""

import tensorflow as tf

weight = tf.Variable(tf.ones([3, 2]), name="weight")
scaled_weight = weight * 0.5  # computed now, never again
x = tf.ones([4, 3])


def loss():
    return tf.reduce_sum(tf.matmul(x, scaled_weight))
