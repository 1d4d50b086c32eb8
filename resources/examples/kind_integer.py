"""A value that passes through an integer dtype: tf.cast to int32."""

import tensorflow as tf

scale = tf.Variable(3.7, name="scale")
bias = tf.Variable(0.1, name="bias")
x = tf.range(4, dtype=tf.float32)


def loss():
    steps = tf.cast(scale, tf.int32)
    return tf.reduce_sum(x * tf.cast(steps, tf.float32)) + bias
