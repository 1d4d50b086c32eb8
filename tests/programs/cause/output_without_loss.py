"""A model with two outputs compiled with a loss for one of them (loss={"cls": ...}): the "box"
head is read by the step and never trained; Keras only warns."""

import keras
import numpy as np
from keras import layers

keras.utils.set_random_seed(0)
inp = keras.Input((6,))
h = layers.Dense(8, activation="relu")(inp)
cls = layers.Dense(3, name="cls")(h)
box = layers.Dense(4, name="box")(h)
model = keras.Model(inp, {"cls": cls, "box": box})
model.compile(optimizer="adam", loss={"cls": "sparse_categorical_crossentropy"})
x = np.random.rand(32, 6).astype("float32")
y = {"cls": np.random.randint(0, 3, size=(32,)), "box": np.random.rand(32, 4).astype("float32")}
model.fit(x, y, epochs=1, batch_size=8, verbose=0)
