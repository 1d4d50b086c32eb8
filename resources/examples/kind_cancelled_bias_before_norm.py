"""A bias right before BatchNormalization: it gets only rounding noise, so it never trains.

Each Conv2D keeps its default bias and feeds a BatchNormalization. The normalization subtracts
the batch mean per channel, and with it whatever constant the bias added. So the bias's
gradient is zero in exact arithmetic. In float32 it is rounding noise, 5 decades below the
kernel beside it in the same layer. tfviz lists the two conv biases as `cancelled`. That is
information, not a warning: the model trains, but those biases are dead weight. The fix is
`use_bias=False` on a layer that feeds a normalization, since BatchNormalization's own beta
does the bias's job.
"""

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
model = keras.Sequential([
    keras.Input((16, 16, 3)),
    keras.layers.Conv2D(8, 3, padding="same", name="conv1"),
    keras.layers.BatchNormalization(name="bn1"),
    keras.layers.ReLU(),
    keras.layers.Conv2D(8, 3, padding="same", name="conv2"),
    keras.layers.BatchNormalization(name="bn2"),
    keras.layers.ReLU(),
    keras.layers.GlobalAveragePooling2D(),
    keras.layers.Dense(1, name="out"),
])
x = tf.random.normal([8, 16, 16, 3])
y = tf.random.normal([8, 1])


def loss():
    return tf.reduce_mean((model(x, training=True) - y) ** 2)
