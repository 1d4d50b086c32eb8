"""A two-output model compiled with a loss for one output only: the other head's weights
are read by the step, and nothing computed from them reaches the loss."""

import keras
import numpy as np

keras.utils.set_random_seed(0)
inp = keras.Input((8,))
h = keras.layers.Dense(16, activation="relu")(inp)
main = keras.layers.Dense(1, name="main")(h)
aux = keras.layers.Dense(3, name="aux")(h)
model = keras.Model(inp, {"main": main, "aux": aux})
model.compile(optimizer="adam", loss={"main": "mse"})
x = np.random.default_rng(0).normal(size=(32, 8)).astype("float32")
model.fit(x, {"main": x[:, :1], "aux": np.zeros((32, 3), "float32")}, epochs=1, verbose=0)
