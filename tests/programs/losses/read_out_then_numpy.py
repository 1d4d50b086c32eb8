"""A loss computed in NumPy from the prediction, read out on a line of its own
(``.numpy()``): the tape records the matmul, but the loss is a new constant made of
NumPy's numbers, so ``w`` gets no gradient."""

import numpy as np
import tensorflow as tf

tf.random.set_seed(0)
w = tf.Variable(tf.random.normal([5, 1]), name="w")
x = tf.random.normal([20, 5])
y = np.random.default_rng(0).random((20, 1)).astype("float32")


def loss():
    pred = tf.matmul(x, w)
    values = pred.numpy()
    return tf.constant(np.mean((values - y) ** 2))
