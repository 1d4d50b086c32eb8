"""A custom loop that differentiates model.variables, BatchNormalization's moving statistics
included: TensorFlow gives those None, and the optimizer is handed only what has a gradient."""

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8), keras.layers.BatchNormalization(),
                          keras.layers.ReLU(), keras.layers.Dense(1)])
opt = keras.optimizers.SGD(0.01)
x, y = tf.random.normal([16, 6]), tf.random.normal([16, 1])
for _ in range(2):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    grads = tape.gradient(loss, model.variables)
    opt.apply_gradients([(g, v) for g, v in zip(grads, model.variables) if g is not None])
