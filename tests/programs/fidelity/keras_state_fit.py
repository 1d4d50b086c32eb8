"""A denoising model trained with fit, as Keras' diffusion examples write it: noise from
Keras' global seed generator inside train_step, BatchNorm, a loss metric, and an EMA copy
of the network updated with assign."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

keras.utils.set_random_seed(0)


def make_net():
    inp = keras.Input((8,))
    h = layers.Dense(16, activation="relu")(inp)
    h = layers.BatchNormalization()(h)
    return keras.Model(inp, layers.Dense(8)(h))


class Diffusion(keras.Model):
    def __init__(self):
        super().__init__()
        self.network = make_net()
        self.ema_network = keras.models.clone_model(self.network)
        self.loss_tracker = keras.metrics.Mean(name="loss")

    def train_step(self, images):
        noises = keras.random.normal(shape=tf.shape(images))
        times = keras.random.uniform(shape=(tf.shape(images)[0], 1))
        with tf.GradientTape() as tape:
            pred = self.network(images + times * noises, training=True)
            loss = tf.reduce_mean(tf.square(pred - noises))
        grads = tape.gradient(loss, self.network.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.network.trainable_weights))
        self.loss_tracker.update_state(loss)
        for w, ema_w in zip(self.network.weights, self.ema_network.weights):
            ema_w.assign(0.999 * ema_w + 0.001 * w)
        return {"loss": self.loss_tracker.result()}


model = Diffusion()
model.compile(optimizer=keras.optimizers.AdamW(1e-3))
x = np.random.rand(64, 8).astype("float32")
model.fit(x, epochs=1, batch_size=16, verbose=0)
