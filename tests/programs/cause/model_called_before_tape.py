"""A custom loop that calls the model before its tape opens: TensorFlow gives every weight
None, for the tape never recorded the forward pass. The cause is the tape's
(``outside_tape``), at the line that calls the model, and the fix is to call it inside the
``with tf.GradientTape()`` block. ``--in-function`` makes the same mistake in a step
function; ``--at-top`` calls the model once, at the script's top, before the loop: what the
loop then uses is a frozen copy of the model's output, computed once (``frozen_copy``)."""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--in-function", action="store_true")
parser.add_argument("--at-top", action="store_true")
args = parser.parse_args()

model = tf.keras.Sequential(
    [tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)]
)
opt = tf.keras.optimizers.Adam(1e-3)
rng = np.random.default_rng(0)
x = rng.random((32, 4), dtype=np.float32)
y = rng.random((32, 1), dtype=np.float32)


def train_step(x, y):
    pred = model(x, training=True)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(pred - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))


if args.at_top:
    pred = model(x, training=True)
for _ in range(3):
    if args.in_function:
        train_step(x, y)
        continue
    if not args.at_top:
        pred = model(x, training=True)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(pred - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
