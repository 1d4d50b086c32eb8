"""A custom loop whose loss is computed in NumPy: the tape reads ``w`` and ``b``, but the
loss is a new constant made from a NumPy value, so neither gets a gradient. With
``--float``, the loss is computed in TensorFlow and read out as a Python float, then made a
tensor again: the same cut, at ``float()``."""

import sys

import numpy as np
import tensorflow as tf

tf.random.set_seed(0)
w = tf.Variable(tf.random.normal([5, 1]), name="w")
b = tf.Variable(tf.zeros([1]), name="b")
x = tf.random.normal([20, 5])
y = tf.random.normal([20, 1])
opt = tf.keras.optimizers.SGD(0.1)
for step in range(3):
    with tf.GradientTape() as tape:
        pred = x @ w + b
        if "--float" in sys.argv:
            loss = tf.constant(float(tf.reduce_mean((pred - y) ** 2)))
        else:
            err = (pred - y).numpy()
            loss = tf.constant(np.mean(err**2))
    grads = tape.gradient(loss, [w, b])
    opt.apply_gradients(zip(grads, [w, b]))
