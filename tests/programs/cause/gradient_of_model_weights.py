"""A custom loop that asks for the gradient of ``model.weights``: a BatchNormalization's
moving statistics are among them, and TensorFlow gives them None. They are named as the
program holds them (``model.layers[1].moving_mean``), and the fix is to differentiate
``model.trainable_variables``."""

import numpy as np
import tensorflow as tf

model = tf.keras.Sequential(
    [
        tf.keras.Input((4,)),
        tf.keras.layers.Dense(8, use_bias=False),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.Dense(1),
    ]
)
opt = tf.keras.optimizers.SGD(1e-2)
rng = np.random.default_rng(0)
x = rng.random((32, 4), dtype=np.float32)
y = rng.random((32, 1), dtype=np.float32)

for _ in range(2):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    grads = tape.gradient(loss, model.weights)
    opt.apply_gradients([(g, v) for g, v in zip(grads, model.weights) if g is not None])
