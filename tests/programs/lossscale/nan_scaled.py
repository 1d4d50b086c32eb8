"""Mixed precision with a loss scaler, and a NaN of the program's own: the square root of a
difference that is negative for some rows. Its gradient is NaN unscaled too: the op is the
cause, not the scale."""

import keras
import numpy as np
import tensorflow as tf

keras.mixed_precision.set_global_policy("mixed_float16")
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(64, 8)).astype("float32")
y = np.random.default_rng(1).normal(size=(64, 1)).astype("float32")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, "tanh"), keras.layers.Dense(1)])
opt = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(1e-2))

for i in range(0, 64, 32):
    xb, yb = x[i : i + 32], y[i : i + 32]
    with tf.GradientTape() as tape:
        pred = tf.cast(model(xb), tf.float32)
        loss = tf.reduce_mean(tf.sqrt(pred - yb))
        scaled = opt.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    opt.apply(grads, model.trainable_variables)
