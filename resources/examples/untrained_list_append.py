"""Adapters appended to a layer's list after construction never train.

`AdapterBank` adds small residual adapters on top of a hidden layer. It starts
with an empty list, `self.adapters = []`, and `add_adapter()` appends a new
`tf.Variable` to it later, after the model has been built. Keras 3 tracks the
list, but not a raw `tf.Variable` put into it, so the adapters are missing
from `model.trainable_variables`. The custom loop (`train_step`, a
`tf.function`) differentiates and updates `model.trainable_variables` only:
both adapters are read by the loss (they shift every hidden activation, so
TensorFlow would give them a gradient if asked) but keep their initial values.

Data: a noisy linear-plus-sine regression on 8 features. `--epochs`
(default 2).
"""

import argparse

import keras
import numpy as np
import tensorflow as tf


class AdapterBank(keras.layers.Layer):
    """Adds `x @ A` for every adapter matrix A in `self.adapters`."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.adapters = []

    def build(self, input_shape):
        self.width = int(input_shape[-1])

    def add_adapter(self, seed):
        init = tf.random_normal_initializer(stddev=0.05, seed=seed)
        adapter = tf.Variable(init((self.width, self.width)), name=f"adapter_{len(self.adapters)}")
        self.adapters.append(adapter)

    def call(self, x):
        for adapter in self.adapters:
            x = x + tf.matmul(x, adapter)
        return x


def make_model():
    inputs = keras.Input((8,))
    hidden = keras.layers.Dense(16, activation="tanh", name="hidden")(inputs)
    adapted = AdapterBank(name="adapters")(hidden)
    outputs = keras.layers.Dense(1, name="out")(adapted)
    return keras.Model(inputs, outputs, name="regressor")


def make_data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype("float32")
    y = (x @ rng.normal(size=(8, 1)) + np.sin(x[:, :1]) + 0.1 * rng.normal(size=(n, 1))).astype("float32")
    return x, y


keras.utils.set_random_seed(0)
model = make_model()
bank = model.get_layer("adapters")
bank.add_adapter(seed=1)
bank.add_adapter(seed=2)
optimizer = keras.optimizers.Adam(learning_rate=1e-2)
loss_fn = keras.losses.MeanSquaredError()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    before = [a.numpy().copy() for a in bank.adapters]
    dataset = tf.data.Dataset.from_tensor_slices(make_data()).batch(32)
    for epoch in range(args.epochs):
        for x, y in dataset:
            loss = train_step(x, y)
        print(f"epoch {epoch + 1}: loss {float(loss):.4f}")
    same = all(np.array_equal(b, a.numpy()) for b, a in zip(before, bank.adapters))
    print(
        f"{len(bank.adapters)} adapters, in trainable_variables: "
        f"{sum(any(v is a for v in model.trainable_variables) for a in bank.adapters)}, unchanged: {same}"
    )
