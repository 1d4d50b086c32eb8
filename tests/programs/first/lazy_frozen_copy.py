"""A layer that reshapes its weight in build() trains a frozen copy (seed report 2), and its
model is built by the first call. ``temperature`` is made where the script starts, so the
script holds a variable before that call."""

import keras
import tensorflow as tf


class Reshaped(keras.layers.Layer):
    def build(self, input_shape):
        self.flat = self.add_weight(shape=(int(input_shape[-1]) * 2,), name="flat")
        self.kernel = tf.reshape(self.flat, (int(input_shape[-1]), 2))  # a copy, made once

    def call(self, inputs):
        return inputs @ self.kernel


temperature = tf.Variable(2.0, name="temperature")
model = keras.Sequential([Reshaped(name="reshaped")])
x = tf.random.stateless_normal([8, 3], seed=[1, 2])


def loss():
    return tf.reduce_mean(tf.square(model(x) / temperature))


if __name__ == "__main__":  # the oracle: a training step after the call that built the model
    loss()
    with tf.GradientTape() as tape:
        value = loss()
    variables = [*model.trainable_variables, temperature]
    for v, g in zip(variables, tape.gradient(value, variables)):
        print(getattr(v, "path", v.name.split(":")[0]), "connected" if g is not None else "disconnected")
