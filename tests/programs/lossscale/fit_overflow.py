"""Model.fit under mixed precision, with Keras' own LossScaleOptimizer (compile() wraps the
optimizer in one) at its default scale of 32768: inputs of a few hundred make the first step's
scaled float16 gradients overflow, which the optimizer skips. Unscaled, they are finite."""

import keras
import numpy as np

keras.mixed_precision.set_global_policy("mixed_float16")
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(256, 16)).astype("float32") * 300
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
model = keras.Sequential(
    [
        keras.Input((16,)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(1, dtype="float32"),
    ]
)
model.compile(optimizer="adam", loss=keras.losses.BinaryCrossentropy(from_logits=True))
model.fit(x, y, batch_size=32, epochs=1, verbose=0)
