"""Gradients that exist but are exactly zero at the current values: a ReLU
whose inputs are all negative (a dead unit) and a multiplication by zero."""

import tensorflow as tf

x = tf.constant([[1.0, 2.0], [0.5, 1.5]])
w = tf.Variable([[0.3], [0.2]], name="w")
dead = tf.Variable([[-1.0], [-2.0]], name="dead")
muted = tf.Variable(4.0, name="muted")
mask = tf.zeros([2, 1])


def loss():
    live = tf.matmul(x, w)
    hidden = tf.nn.relu(tf.matmul(x, dead))
    return tf.reduce_sum(live + hidden + muted * mask)
