"""Healthy code that looks suspicious: tfviz must report it ok.

tf.cond, tf.while_loop, tf.gather, a correct tf.custom_gradient, a nested
tf.function and a straight-through estimator (tf.round plus tf.stop_gradient,
where the gradient still flows around the rounding).
"""

import tensorflow as tf

w = tf.Variable([[0.5, -1.0], [2.0, 0.3]], name="w")
table = tf.Variable(tf.random.stateless_normal([5, 2], seed=[3, 4]), name="table")
gate = tf.Variable(1.5, name="gate")
ids = tf.constant([0, 3, 3])


@tf.custom_gradient
def clip_grad_identity(x):
    def grad(dy):
        return tf.clip_by_value(dy, -1.0, 1.0)

    return tf.identity(x), grad


def straight_through_round(x):
    return x + tf.stop_gradient(tf.round(x) - x)


@tf.function
def inner(x):
    return tf.tanh(x) * gate


def loss():
    rows = tf.gather(table, ids)
    h = tf.matmul(rows, w)
    h = tf.cond(gate > 0, lambda: h * gate, lambda: h - gate)
    _, h = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 0.9 + 0.1), [0, h])
    h = clip_grad_identity(h)
    h = straight_through_round(h)
    return tf.reduce_mean(tf.square(inner(h)))
