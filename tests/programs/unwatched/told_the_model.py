"""The same tape told to watch the model's variables: they get their gradients."""

import keras
import tensorflow as tf

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
x = tf.random.normal([16, 4])
y = tf.random.normal([16, 1])
opt = keras.optimizers.Adam()
for _ in range(2):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([v.value for v in model.trainable_variables])  # Keras 3: the tf.Variable inside
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
