"""A tape told to watch the Keras 3 variables themselves, as Keras 2 allowed: TensorFlow refuses them."""

import keras
import tensorflow as tf

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
x = tf.random.normal([16, 4])
y = tf.random.normal([16, 1])
opt = keras.optimizers.Adam()
for _ in range(2):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(model.trainable_variables)  # as Keras 2 allowed
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
