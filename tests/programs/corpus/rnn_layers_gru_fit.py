"""Trains a subclassed GRU regressor (input projection -> GRU -> Dense) on synthetic sensor sequences with model.fit.

Pattern: Keras example "Timeseries forecasting for weather prediction" (recurrent regressor compiled with Adam/MSE and trained with fit, validation split)
Family: RNN layers
Bug: a typo feeds the raw inputs (not the projected ones) to the GRU, so the input projection (proj/kernel, proj/bias) is never used by the loss and gets no gradient
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
rng = np.random.default_rng(0)
x_train = rng.normal(size=(256, 24, 5)).astype("float32")
y_train = (0.6 * x_train[:, -6:, 0].mean(axis=1) - 0.3 * x_train[:, :, 3].mean(axis=1))[:, None].astype("float32")


class GRURegressor(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.proj = tf.keras.layers.Dense(16, activation="tanh", name="proj")
        self.gru = tf.keras.layers.GRU(32, name="gru")
        self.head = tf.keras.layers.Dense(1, name="head")

    def call(self, inputs, training=False):
        projected = self.proj(inputs)
        h = self.gru(inputs if args.bug else projected, training=training)
        return self.head(h)


model = GRURegressor()
model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=2e-3), loss="mse", metrics=["mae"])
history = model.fit(x_train, y_train, batch_size=32, epochs=args.epochs, validation_split=0.25, verbose=0)
print({k: round(v[-1], 4) for k, v in history.history.items()})
