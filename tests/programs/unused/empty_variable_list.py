"""The variable list read before the model is built: empty, and it stays empty."""

import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
params = model.trainable_variables
opt = tf.keras.optimizers.Adam()
x = tf.random.normal([16, 4])
y = tf.random.normal([16, 1])
for _ in range(2):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, params)
    opt.apply_gradients(zip(grads, params))
