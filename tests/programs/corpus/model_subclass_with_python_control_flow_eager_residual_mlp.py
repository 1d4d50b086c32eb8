"""Trains a subclassed residual MLP whose call() has Python `if training:` branches and a Python for loop over a list of blocks, with an eager GradientTape loop (no tf.function).

Pattern: Keras guide "Making new layers and models via subclassing" (blocks kept in a Python list, training flag) with the eager custom loop of "Writing a training loop from scratch"
Family: Model subclass with Python control flow
Bug: a typo in the block loop feeds the stem output to every block instead of chaining them, so only the last block reaches the loss: block0 and block1 (their dense kernels/biases and LayerNorm gamma/beta) get no gradient
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
rng = np.random.default_rng(0)
x_train = rng.normal(size=(128, 10)).astype("float32")
y_train = (np.sin(x_train[:, :3]).sum(axis=1, keepdims=True) + 0.1 * x_train[:, 3:4] ** 2).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(128, seed=0).batch(32)


class ResidualBlock(tf.keras.layers.Layer):
    def __init__(self, units, rate=0.1, **kwargs):
        super().__init__(**kwargs)
        self.dense1 = tf.keras.layers.Dense(units, activation="relu")
        self.dense2 = tf.keras.layers.Dense(units)
        self.norm = tf.keras.layers.LayerNormalization()
        self.rate = rate

    def call(self, x, training=False):
        y = self.dense2(self.dense1(x))
        if training:
            y = tf.nn.dropout(y, rate=self.rate)
        return self.norm(x + y)


class ResidualMLP(tf.keras.Model):
    def __init__(self, width=32, depth=3, noise=0.05):
        super().__init__()
        self.noise = noise
        self.stem = tf.keras.layers.Dense(width, name="stem")
        self.blocks = [ResidualBlock(width, name=f"block{i}") for i in range(depth)]
        self.head = tf.keras.layers.Dense(1, name="head")

    def call(self, x, training=False):
        if training:
            x = x + tf.random.normal(tf.shape(x), stddev=self.noise)
        stem = self.stem(x)
        h = stem
        for block in self.blocks:
            h = block(stem if args.bug else h, training=training)
        return self.head(h)


model = ResidualMLP()
optimizer = tf.keras.optimizers.Adam(learning_rate=3e-3)

for epoch in range(args.epochs):
    for x_batch, y_batch in dataset:
        with tf.GradientTape() as tape:
            pred = model(x_batch, training=True)
            loss = tf.reduce_mean(tf.square(pred - y_batch))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    val = tf.reduce_mean(tf.square(model(x_train, training=False) - y_train))
    print(f"epoch {epoch}: train mse {float(loss):.4f} eval mse {float(val):.4f}")
