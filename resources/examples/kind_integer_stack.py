"""An integer cut hidden inside a larger expression: tf.cast to int32, then tf.stack.

The gradient stops at the cast (the user's choice of dtype), not at the stack
that later consumes the integer value.
"""

import tensorflow as tf

offset = tf.Variable(2.6, name="offset")
bias = tf.Variable(0.1, name="bias")
x = tf.range(4, dtype=tf.float32)


def loss():
    index = tf.stack([tf.cast(offset, tf.int32), tf.constant(1)])
    return tf.reduce_sum(x * tf.cast(tf.reduce_sum(index), tf.float32)) + bias
