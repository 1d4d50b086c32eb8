"""A tf.custom_gradient whose gradient function returns None for one input."""

import tensorflow as tf

w = tf.Variable(2.0, name="w")
v = tf.Variable(3.0, name="v")


@tf.custom_gradient
def scaled(a, b):
    def grad(dy):
        return dy * b, None  # no gradient for b

    return a * b, grad


def loss():
    return scaled(w, v) ** 2
