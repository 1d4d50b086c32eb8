"""A model whose output is binarised with tf.sign inside the loss: Sign's gradient is zero
everywhere, so the step's gradients are all exactly zero."""

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)

model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
x = tf.random.normal([16, 4])
y = tf.sign(tf.random.normal([16, 1]))
opt = keras.optimizers.Adam()


@tf.function
def step():
    with tf.GradientTape() as tape:
        pred = tf.sign(model(x))
        loss = tf.reduce_mean(tf.square(pred - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))


for _ in range(3):
    step()
