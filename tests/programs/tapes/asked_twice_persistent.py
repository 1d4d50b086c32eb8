"""The same step with a persistent tape: both calls answer."""

import keras
import tensorflow as tf

enc = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8)])
dec = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
x = tf.random.normal([16, 4])
opt = keras.optimizers.Adam()
for _ in range(3):
    with tf.GradientTape(persistent=True) as tape:
        z = enc(x)
        loss = tf.reduce_mean((dec(z) - x) ** 2)
    g1 = tape.gradient(loss, enc.trainable_variables)
    g2 = tape.gradient(loss, dec.trainable_variables)
    del tape
    opt.apply_gradients(zip(g1 + g2, enc.trainable_variables + dec.trainable_variables))
