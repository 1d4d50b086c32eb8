"""The same step in a tf.function: the second call raises while TensorFlow traces it."""

import keras
import tensorflow as tf

enc = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8)])
dec = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
x = tf.random.normal([16, 4])
opt = keras.optimizers.Adam()


@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((dec(enc(x)) - x) ** 2)
    g1 = tape.gradient(loss, enc.trainable_variables)
    g2 = tape.gradient(loss, dec.trainable_variables)
    opt.apply_gradients(zip(g1 + g2, enc.trainable_variables + dec.trainable_variables))
    return loss


for _ in range(3):
    train_step(x)
