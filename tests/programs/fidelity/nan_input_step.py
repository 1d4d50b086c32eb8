"""A batch with one NaN feature, a Dense-ReLU model, a hand-written step.

Compiled (the default), Grappler fuses the first layer's MatMul, BiasAdd and Relu: the fused
ReLU makes the NaN row 0, so only the first kernel's gradient is NaN and the loss is finite.
Run eagerly (``--eager``), ReLU passes NaN on and every gradient is NaN. The program writes
the norms of its own gradients at each step to the file it is given (seeded: a ``python``
run gives the norms of every run's first step).
"""

import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.random((8, 4)).astype("float32")
x[3, 1] = np.nan
y = rng.random((8, 1)).astype("float32")

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(6, activation="relu"), keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(0.01)


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    return loss, grads


if "--eager" not in sys.argv:
    train_step = tf.function(train_step)

with open(sys.argv[1], "w") as log:
    for _ in range(2):
        loss, grads = train_step(x, y)
        log.write(" ".join(str(float(tf.norm(g))) for g in grads) + "\n")
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
