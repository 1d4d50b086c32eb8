"""A model its first call builds (no keras.Input): only an eager first call builds it as the
user's script does."""

import keras
import tensorflow as tf
from probe_layer import ProbeDense

model = keras.Sequential([ProbeDense(8, activation="relu", name="body"), ProbeDense(1, name="head")])
x = tf.random.stateless_normal([16, 4], seed=[1, 2])


def loss():
    return tf.reduce_mean(tf.square(model(x)))
