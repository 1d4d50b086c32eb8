"""A custom loop whose model makes its head layer inside call(): a new layer at every step.

The program runs without an error; the head's weights start again from their initializer
at every step, and the optimizer never sees them (Keras does not track a layer made in call).
"""

import keras
import tensorflow as tf


class Net(keras.Model):
    def __init__(self):
        super().__init__()
        self.body = keras.layers.Dense(16, activation="relu")

    def call(self, x):
        h = self.body(x)
        head = keras.layers.Dense(1)
        return head(h)


model = Net()
opt = keras.optimizers.SGD(0.01)
x = tf.random.normal([32, 8])
y = tf.random.normal([32, 1])
for _ in range(3):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
print("done")
