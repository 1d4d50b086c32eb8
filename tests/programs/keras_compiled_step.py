"""Keras ``fit`` on a model whose own ``train_step`` is a ``@tf.function``.

The same dying ReLU as dying_relu.py: every input is 1, ``gate`` is
``relu(x * kernel + bias)`` with kernel = bias = 1, its mean is the loss, and
SGD at 0.6 kills it at the third update (pre-activation 2.0, 0.8, then -0.4):
``gate/kernel`` and ``gate/bias`` get exactly zero gradients from batch 3 on.
``scale`` stays connected. 64 rows in batches of 8, one epoch: 8 batches.
"""

import numpy as np
import tensorflow as tf


class Model(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.gate = tf.keras.layers.Dense(1, activation="relu", kernel_initializer="ones",
                                          bias_initializer="ones", name="gate")
        self.scale = tf.keras.layers.Dense(1, use_bias=False, name="scale",
                                           kernel_initializer=tf.keras.initializers.Constant(3.0))

    def call(self, x):
        return self.gate(x), self.scale(x)

    @tf.function
    def train_step(self, data):
        x, _ = data
        with tf.GradientTape() as tape:
            gate_out, scale_out = self(x, training=True)
            loss = tf.reduce_mean(gate_out) + tf.reduce_mean(tf.square(scale_out - 1.0))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


model = Model()
model(np.ones((1, 1), np.float32))
model.compile(optimizer=tf.keras.optimizers.SGD(0.6))
x = np.ones((64, 1), np.float32)
model.fit(x, x, batch_size=8, epochs=1, shuffle=False, verbose=0)
print("trained")
