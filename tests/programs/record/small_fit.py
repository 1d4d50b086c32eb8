"""A small Keras model trained with fit, seeded: the same steps every run."""

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(64, 6)).astype("float32")
y = (x[:, :2].sum(axis=1, keepdims=True) > 0).astype("float32")

model = tf.keras.Sequential(
    [
        tf.keras.Input((6,)),
        tf.keras.layers.Dense(8, activation="relu", name="hidden"),
        tf.keras.layers.Dense(1, activation="sigmoid", name="out"),
    ]
)
model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="binary_crossentropy")
model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
