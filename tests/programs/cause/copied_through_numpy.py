"""A training program whose weights are copied through NumPy before it trains: a layer's
``build()`` makes its transpose from the weight's values read out (``fit``), or, with
``--loop``, a custom loop multiplies by a copy of the first layer's kernel made at the top.

No op links a variable to a tensor made of its values read out: TensorFlow gives the copied
weight None at the first step, and the optimizer never moves it.
"""

import sys

import keras
import numpy as np
import tensorflow as tf


class Transposed(keras.layers.Layer):
    def build(self, shape):
        self.w = self.add_weight(shape=(shape[-1], 4), initializer="glorot_uniform")
        self.w_t = tf.constant(np.transpose(self.w.numpy()))

    def call(self, x):
        return tf.matmul(x, tf.transpose(self.w_t))


x = np.random.default_rng(0).random((8, 3), dtype=np.float32)
y = np.random.default_rng(1).random((8, 1), dtype=np.float32)

if "--loop" in sys.argv:
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)]
    )
    frozen = tf.constant(model.layers[0].kernel.numpy())
    opt = keras.optimizers.SGD(0.1)
    for _ in range(3):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, frozen) + model.layers[0].bias)
            loss = tf.reduce_mean((model.layers[1](h) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
else:
    model = keras.Sequential([keras.Input((3,)), Transposed(), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, epochs=1, verbose=0)
