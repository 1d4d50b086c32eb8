"""A small healthy Keras model with BatchNorm and a numerically stable loss.

Every weight gets a gradient. The graph still holds cuts that no weight needs:
the `tf.stop_gradient` inside `tf.nn.moments` (BatchNorm's variance), and the
integer shape arithmetic of the cross-entropy. tfviz draws those muted, never
in a bug's style.
"""

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)  # the same weights on every run
model = keras.Sequential(
    [
        keras.Input((8,)),
        # no bias: the BatchNormalization right after would cancel it (its beta is the bias)
        keras.layers.Dense(16, use_bias=False, name="dense_in"),
        keras.layers.BatchNormalization(name="bn"),
        keras.layers.ReLU(name="relu"),
        keras.layers.Dense(3, name="logits"),
    ],
    name="classifier",
)
x = tf.random.normal([32, 8])
y = tf.random.uniform([32], maxval=3, dtype=tf.int32)
ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def loss():
    return ce(y, model(x, training=True))
