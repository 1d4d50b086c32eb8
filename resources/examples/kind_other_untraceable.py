"""The target leaves TensorFlow through .numpy(), so it cannot be traced.

tfviz says so and still checks the gradient eagerly: the variable that went
through NumPy gets none.
"""

import tensorflow as tf

gain = tf.Variable(2.0, name="gain")
w = tf.Variable([1.0, 2.0], name="w")


def loss():
    factor = float(gain.numpy())  # a Python number: the link to `gain` is gone
    return tf.reduce_sum(w * factor)
