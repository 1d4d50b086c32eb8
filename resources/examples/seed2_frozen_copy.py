"""Seed 2: a Keras layer reshapes its weight in build().

build() runs once, eagerly, so `self.weights2` is a plain tensor computed from
the weight at that moment: a frozen copy. call() multiplies by the copy, the
weight itself is never read, and Keras only warns "Gradients do not exist for
variables" while the layer never learns.
"""

import numpy as np
import tensorflow as tf


class FCLayer(tf.keras.layers.Layer):
    def __init__(self, output_size, cause_error=False):
        super().__init__()
        self.output_size = output_size
        self.cause_error = cause_error

    def build(self, input_shape):
        self.input_size = input_shape[1]
        weights = self.add_weight(
            shape=(self.input_size, self.output_size), initializer="random_normal", trainable=True
        )
        if self.cause_error:
            self.weights2 = tf.reshape(weights, shape=(self.input_size, self.output_size))
        else:
            self.weights2 = weights

    def call(self, inputs):
        return tf.matmul(inputs, self.weights2)


rng = np.random.default_rng(0)
x_train = rng.random((32, 28 * 28), dtype=np.float32)
y_train = tf.keras.utils.to_categorical(rng.integers(0, 10, 32), 10)

model = tf.keras.models.Sequential()
model.add(FCLayer(10, cause_error=True))
model.add(tf.keras.layers.Dense(10, activation="softmax"))


def loss():
    predictions = model(x_train)
    return tf.reduce_mean(tf.keras.losses.categorical_crossentropy(y_train, predictions))


if __name__ == "__main__":
    model.compile(loss="categorical_crossentropy", optimizer="adam")
    model.fit(x_train, y_train, epochs=2)
