"""The same kind of step in a custom loop: a tf.function whose first trace makes Keras'
global seed generator, with a metric and an EMA copy updated inside it."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

keras.utils.set_random_seed(0)
net = keras.Sequential(
    [keras.Input((8,)), layers.Dense(16, activation="relu"), layers.BatchNormalization(), layers.Dense(8)]
)
ema = keras.models.clone_model(net)
opt = keras.optimizers.Adam(1e-3)
mean_loss = keras.metrics.Mean()


@tf.function
def train_step(images):
    noises = keras.random.normal(shape=tf.shape(images))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(net(images + noises, training=True) - noises))
    grads = tape.gradient(loss, net.trainable_variables)
    opt.apply_gradients(zip(grads, net.trainable_variables))
    mean_loss.update_state(loss)
    for w, e in zip(net.weights, ema.weights):
        e.assign(0.99 * e + 0.01 * w)
    return loss


data = np.random.rand(64, 8).astype("float32")
for _epoch in range(2):
    for i in range(0, 64, 16):
        train_step(data[i : i + 16])
