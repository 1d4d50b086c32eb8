"""A student's first gradient: the input typed out with the values a variable was given.

``w`` is never read, so it gets no gradient: ``not_read``. The constant ``x`` and the layer's
``table`` hold, by chance, the very values of ``w`` and of the layer's ``kernel``, but they are
made of literals, not computed from either variable: neither is a frozen copy.
"""

import tensorflow as tf

w = tf.Variable([1.0, 2.0, 3.0])
b = tf.Variable(0.5)
x = tf.constant([1.0, 2.0, 3.0])


class Scale(tf.Module):
    def __init__(self):
        super().__init__()
        self.kernel = tf.Variable([[1.0, 0.0], [0.0, 2.0]])
        self.table = tf.constant([[1.0, 0.0], [0.0, 2.0]])

    def __call__(self, v):
        return tf.reduce_sum(self.table) * v


scale = Scale()


def loss():
    return tf.reduce_sum(x * b) + scale(b)
