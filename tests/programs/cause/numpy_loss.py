"""A custom loop whose loss is computed in NumPy, from the model's output read out with
``.numpy()``: the tape never records it, and TensorFlow's ``tape.gradient`` raises on the
NumPy value it is handed."""

import numpy as np
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.SGD(0.1)
rng = np.random.default_rng(0)
x = rng.random((16, 4), dtype=np.float32)
y = rng.random((16, 1), dtype=np.float32)

for _ in range(3):
    with tf.GradientTape() as tape:
        pred = model(x)
        loss = np.mean((pred.numpy() - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
