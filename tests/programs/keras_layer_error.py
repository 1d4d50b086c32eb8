"""An eager custom loop whose own layer rejects its input inside ``call``.

Keras wraps the error in "Exception encountered when calling Checked.call()"
and a dump of the call's arguments; the user needs the assertion's message.
"""

import numpy as np
import tensorflow as tf


class Checked(tf.keras.layers.Layer):
    def call(self, x, training=None):
        tf.debugging.assert_less(tf.reduce_max(x), 0.5, message="inputs must be scaled below 0.5")
        return x


model = tf.keras.Sequential([tf.keras.Input((4,)), Checked(), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam()
x = np.ones((2, 4), np.float32)
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(model(x, training=True))
grads = tape.gradient(loss, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
