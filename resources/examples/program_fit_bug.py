"""Keras `model.fit` on a tf.data.Dataset, with a layer whose kernel never learns.

`QuantizedDense` fake-quantises its kernel to steps of 1/16 with `tf.round`
and no straight-through estimator. Round has no gradient, so
`qdense/kernel` gets None (Keras warns "Gradients do not exist for variables
['qdense/kernel']" and fit carries on); `qdense/bias`, `head/kernel` and
`head/bias` get gradients. The model is functional and built before fit.
"""

import numpy as np
import tensorflow as tf


class QuantizedDense(tf.keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(
            name="kernel", shape=(input_shape[-1], self.units), initializer="glorot_uniform"
        )
        self.bias = self.add_weight(name="bias", shape=(self.units,), initializer="zeros")

    def call(self, x):
        # fake quantisation of the weights to 1/16 steps
        q_kernel = tf.round(self.kernel * 16.0) / 16.0
        return tf.nn.relu(tf.matmul(x, q_kernel) + self.bias)


rng = np.random.default_rng(0)
x = rng.normal(size=(256, 20)).astype("float32")
y = rng.integers(0, 3, size=256)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(256, seed=0).batch(32)

inputs = tf.keras.Input((20,))
hidden = QuantizedDense(32, name="qdense")(inputs)
outputs = tf.keras.layers.Dense(3, activation="softmax", name="head")(hidden)
model = tf.keras.Model(inputs, outputs)

model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(dataset, epochs=2, verbose=2)
