"""The same output binarised with a straight-through estimator: the gradients flow."""

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
        out = model(x)
        pred = out + tf.stop_gradient(tf.sign(out) - out)  # straight-through
        loss = tf.reduce_mean(tf.square(pred - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))


for _ in range(3):
    step()
