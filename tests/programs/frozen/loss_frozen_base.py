"""A ``loss()`` over a frozen base and a head Keras builds on its first call."""

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
base = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(16)], name="base"
)
base.trainable = False
head = keras.layers.Dense(1)
x = tf.random.normal([4, 8])


def loss():
    return tf.reduce_mean(head(base(x)) ** 2)
