"""Mixed precision whose loss scale starts far too high: every scaled gradient of the float16
layer overflows, so the LossScaleOptimizer skips the step and halves its scale. Unscaled, the
gradients are finite: the scale is the cause, not an op."""

import keras
import numpy as np
import tensorflow as tf

keras.mixed_precision.set_global_policy("mixed_float16")
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(128, 16)).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
model = keras.Sequential(
    [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1, dtype="float32")]
)
opt = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(1e-3), initial_scale=2.0**40)
loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
        scaled = opt.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    opt.apply(grads, model.trainable_variables)
    return loss


for i in range(0, 128, 32):
    train_step(x[i : i + 32], y[i : i + 32])
