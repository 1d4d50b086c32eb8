"""A plain eager training loop (no tf.function) whose output scale never learns.

`train_step(x, y)` is an ordinary Python function with a GradientTape, and the
update is a hand-written SGD that skips variables whose gradient is None.

The bug: the model multiplies its output by `np.exp(self.log_scale.numpy())`.
`.numpy()` turns the variable into a NumPy value, outside anything the tape
records, so `log_scale` gets None, silently. `w1`, `b1`, `w2` and `b2` get
gradients. `--epochs` (default 3) sets the length of the run.
"""

import argparse

import numpy as np
import tensorflow as tf


class Regressor(tf.Module):
    def __init__(self, n_in=4, n_hidden=16):
        super().__init__(name="regressor")
        self.w1 = tf.Variable(tf.random.normal([n_in, n_hidden], stddev=0.5, seed=1), name="w1")
        self.b1 = tf.Variable(tf.zeros([n_hidden]), name="b1")
        self.w2 = tf.Variable(tf.random.normal([n_hidden, 1], stddev=0.5, seed=2), name="w2")
        self.b2 = tf.Variable(tf.zeros([1]), name="b2")
        self.log_scale = tf.Variable(0.0, name="log_scale")

    def __call__(self, x):
        h = tf.tanh(x @ self.w1 + self.b1)
        out = h @ self.w2 + self.b2
        return out * np.exp(self.log_scale.numpy())


model = Regressor()
learning_rate = 0.05


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    for var, grad in zip(model.trainable_variables, grads):
        if grad is not None:
            var.assign_sub(learning_rate * grad)
    return loss


rng = np.random.default_rng(0)
x_train = rng.normal(size=(128, 4)).astype("float32")
y_train = (3.0 * np.sin(x_train[:, :1]) + x_train[:, 1:2]).astype("float32")

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Fit a small regressor.")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    for epoch in range(args.epochs):
        for start in range(0, len(x_train), 32):
            loss = train_step(x_train[start : start + 32], y_train[start : start + 32])
        print(f"epoch {epoch + 1}: loss {float(loss):.4f}")
