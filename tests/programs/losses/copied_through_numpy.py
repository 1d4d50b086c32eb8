"""Copies of weights made through NumPy: their values read out with ``.numpy()`` and made
tensors again, at the script's top and in a layer's ``build()``.

TensorFlow records no op between a variable and a tensor made of its values read out, so the
target's tape never reaches the first layer's kernel nor the layer's ``w``: both get None.
Each is a frozen copy, made at the line that read the values out.

Run as a program, it trains: with ``fit``, a model whose ``Transposed`` layer made its copy in
``build()``; with ``--loop``, a custom loop on ``loss()``. The optimizer never moves a copied
weight.
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


dense = keras.layers.Dense(4, activation="relu")
dense.build((None, 3))
frozen = tf.constant(dense.kernel.numpy())
layer = Transposed()
layer.build((None, 4))
x = np.random.default_rng(0).random((8, 3), dtype=np.float32)


def loss():
    h = tf.nn.relu(tf.matmul(x, frozen) + dense.bias)
    return tf.reduce_mean(layer(h) ** 2)


if __name__ == "__main__":
    if "--loop" in sys.argv:
        weights = [dense.kernel, dense.bias, layer.w]
        opt = keras.optimizers.SGD(0.1)
        for _ in range(3):
            with tf.GradientTape() as tape:
                value = loss()
            opt.apply_gradients(zip(tape.gradient(value, weights), weights))
    else:
        y = np.random.default_rng(1).random((8, 1), dtype=np.float32)
        model = keras.Sequential([keras.Input((3,)), Transposed(), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(x, y, epochs=1, verbose=0)
