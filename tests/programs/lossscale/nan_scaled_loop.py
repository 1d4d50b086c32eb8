"""Mixed precision with a NaN of the program's own at every step, under a LossScaleOptimizer:
the square root of a ReLU that is 0 for some rows has a finite value and an infinite slope
there, so the loss is finite and its gradient is not. The optimizer skips each step and halves
its scale, which never helps: at a scale of 1 the gradient is still not finite."""

import keras
import numpy as np
import tensorflow as tf

keras.mixed_precision.set_global_policy("mixed_float16")
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(32, 8)).astype("float32")
y = np.random.default_rng(1).normal(size=(32, 1)).astype("float32")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, "tanh"), keras.layers.Dense(1)])
opt = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(1e-2), initial_scale=2.0**5)

for _ in range(12):
    with tf.GradientTape() as tape:
        pred = tf.cast(model(x), tf.float32)
        loss = tf.reduce_mean(tf.sqrt(tf.nn.relu(pred - y)))
        scaled = opt.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    opt.apply(grads, model.trainable_variables)
