"""A GRU sequence classifier with an attention-pooling layer, compiled with steps_per_execution=4 and trained with fit on 8 batches per epoch.

Pattern: Keras `model.compile(..., steps_per_execution=N)` (several train steps per tf.function call, a tf.while_loop in Keras' multi_step_on_iterator) with the attention pooling of "Hierarchical Attention Networks" (Yang et al., NAACL 2016): score = v^T tanh(W h_t), softmax over time, weighted sum
Family: steps_per_execution
Bug: the pooling picks the single best time step with tf.one_hot(tf.argmax(scores)) ("hard attention") instead of softmax weights, so the attention layer's W, b and v get None gradients
Step: 6
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
args = parser.parse_args()

rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
TIMESTEPS, FEATURES = 10, 6
x_train = rng.normal(size=(128, TIMESTEPS, FEATURES)).astype(np.float32)
y_train = (x_train[:, 3, 0] + x_train[:, 7, 1] > 0).astype(np.float32)


class AttentionPooling(tf.keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.W = self.add_weight(name="W", shape=(input_shape[-1], self.units), initializer="glorot_uniform")
        self.b = self.add_weight(name="b", shape=(self.units,), initializer="zeros")
        self.v = self.add_weight(name="v", shape=(self.units, 1), initializer="glorot_uniform")

    def call(self, h):
        scores = tf.squeeze(tf.matmul(tf.tanh(tf.matmul(h, self.W) + self.b), self.v), -1)  # (batch, time)
        if args.bug:
            weights = tf.one_hot(tf.argmax(scores, axis=-1), depth=tf.shape(h)[1])
        else:
            weights = tf.nn.softmax(scores, axis=-1)
        return tf.reduce_sum(h * weights[..., None], axis=1)


inputs = tf.keras.Input(shape=(TIMESTEPS, FEATURES))
h = tf.keras.layers.GRU(16, return_sequences=True)(inputs)
pooled = AttentionPooling(8, name="attention")(h)
outputs = tf.keras.layers.Dense(1, activation="sigmoid")(pooled)
model = tf.keras.Model(inputs, outputs)
model.compile(optimizer=tf.keras.optimizers.RMSprop(1e-3), loss="binary_crossentropy",
              metrics=["accuracy"], steps_per_execution=4)
history = model.fit(x_train, y_train, batch_size=16, epochs=1, verbose=0)
print("loss:", round(history.history["loss"][-1], 4))
