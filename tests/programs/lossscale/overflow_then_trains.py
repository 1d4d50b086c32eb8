"""Mixed precision whose loss scale starts too high: the first steps' scaled gradients overflow
float16, and the LossScaleOptimizer skips each and halves its scale until they fit; then it
trains. Nothing of the program's own is ever NaN."""

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
opt = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(1e-3), initial_scale=2.0**24)
loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
        scaled = opt.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    opt.apply(grads, model.trainable_variables)
    return loss


for _epoch in range(3):
    for i in range(0, 128, 16):
        train_step(x[i : i + 16], y[i : i + 16])
