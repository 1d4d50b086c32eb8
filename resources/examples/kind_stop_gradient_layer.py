"""A stray tf.stop_gradient behind a Keras layer: its weights get no gradient.

The encoder's output is passed through `tf.stop_gradient` before the head, so
no gradient arrives at `encoder`'s two Dense layers. Their edges are drawn as
"no gradient", cut at the StopGradient op, never green.
"""

import keras
import tensorflow as tf

tf.random.set_seed(0)
encoder = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu", name="enc_1"),
     keras.layers.Dense(16, name="enc_2")],
    name="encoder",
)
head = keras.layers.Dense(1, name="head")
x = tf.random.normal([32, 8])


def loss():
    features = tf.stop_gradient(encoder(x))
    return tf.reduce_mean(tf.square(head(features)))
