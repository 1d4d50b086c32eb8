"""A Lambda layer whose function uses a tf.Variable: Keras does not track it, so fit never
trains it, while the loss reads it. With --constant the variable is made trainable=False,
a constant on purpose, and nothing is wrong."""

import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
temperature = tf.Variable(2.0, name="temperature", trainable="--constant" not in sys.argv)
model = keras.Sequential([
    keras.Input((8,)),
    keras.layers.Dense(4),
    keras.layers.Lambda(lambda z: z / temperature, name="soften"),
])
model.compile("adam", keras.losses.CategoricalCrossentropy(from_logits=True))
rng = np.random.default_rng(0)
model.fit(rng.random((32, 8)), np.eye(4)[rng.integers(0, 4, 32)], epochs=1, verbose=0)
