"""A deep sigmoid network: the gradient reaches every weight, but too small to train the first ones.

Twelve Dense layers with sigmoid activations. A sigmoid's slope is at most 0.25, so each layer the
gradient passes on its way back shrinks it about tenfold: the first layer's weights get a
gradient per element 13 decades smaller than the output layer's. Every variable is connected;
tfviz warns `vanishing` for those more than 5 decades below the variables nearest the loss,
and the Gradient flow chart shows them under its lower dotted line.
"""

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
hidden = [keras.layers.Dense(64, activation="sigmoid", kernel_initializer="random_normal",
                             name=f"sigmoid_{i}") for i in range(12)]
model = keras.Sequential([keras.Input((64,)), *hidden, keras.layers.Dense(1, name="out")])
x = tf.random.normal([32, 64])
y = tf.random.normal([32, 1])


def loss():
    return tf.reduce_mean((model(x) - y) ** 2)
