"""A program that runs to the end without ever computing a gradient.

It builds a small Keras model and only runs inference on random inputs, then
prints a summary of the predictions. There is no training step to diagnose.
"""

import numpy as np
import tensorflow as tf

model = tf.keras.Sequential(
    [
        tf.keras.Input((6,)),
        tf.keras.layers.Dense(8, activation="relu"),
        tf.keras.layers.Dense(3, activation="softmax"),
    ]
)
x = np.random.default_rng(0).normal(size=(16, 6)).astype("float32")
probabilities = model.predict(x, verbose=0)
print("predicted classes:", np.argmax(probabilities, axis=1).tolist())
print("done, mean confidence", float(np.max(probabilities, axis=1).mean()))
