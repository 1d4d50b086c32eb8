"""A custom loop that runs the model above its tape and reads the prediction out into NumPy,
then computes the loss under the tape from that array: made a tensor again with
``tf.constant`` (``--keras-loss``: handed to a Keras loss, which converts it). With
``--inside``, the model runs under the tape, and its prediction is read out there.

The tape records none of the model's ops (or, ``--inside``, ops the loss never reaches), and
no op links the array to the weights: TensorFlow gives every weight None, and
``apply_gradients`` refuses the step.
"""

import sys

import keras
import numpy as np
import tensorflow as tf

model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
mse = keras.losses.MeanSquaredError()
x = np.random.default_rng(0).random((8, 3), dtype=np.float32)
y = np.random.default_rng(1).random((8, 1), dtype=np.float32)

for _ in range(2):
    if "--inside" not in sys.argv:
        pred = model(x).numpy()
    with tf.GradientTape() as tape:
        if "--inside" in sys.argv:
            pred = model(x).numpy()
        if "--keras-loss" in sys.argv:
            loss = mse(y, pred)
        else:
            loss = tf.reduce_mean((tf.constant(pred) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    print(sum(g is None for g in grads), "weights without a gradient")
