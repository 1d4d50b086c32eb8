"""A model frozen after compile, then fit: it has nothing to train."""

import keras
import numpy as np

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.trainable = False
x = np.random.default_rng(0).normal(size=(16, 4)).astype("float32")
model.fit(x, x[:, :1] * 2.0, epochs=1, verbose=0)
