"""A custom training loop in which one weight never learns.

`train_step` is a `@tf.function` with the GradientTape inside and
`optimizer.apply_gradients`; the epoch loop runs
under `if __name__ == "__main__":` (`--epochs`, default 2).

The bug: `FeatureGate` selects input features with a hard 0/1 mask,
`tf.cast(self.logits > 0.0, x.dtype)`. The comparison produces a bool, so no
gradient reaches `sequential/gate/logits`: TensorFlow returns None for it, and
Keras' optimizer only warns "Gradients do not exist for variables
['sequential/gate/logits']". Every other weight (`sequential/hidden/kernel`,
`sequential/hidden/bias`, `sequential/out/kernel`, `sequential/out/bias`) gets
a gradient. The step is traced twice (Adam creates its slot variables inside
the first trace, which tf.function then discards); both traces agree.
"""

import argparse

import numpy as np
import tensorflow as tf


class FeatureGate(tf.keras.layers.Layer):
    """Learns which input features to keep."""

    def build(self, input_shape):
        self.logits = self.add_weight(name="logits", shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        mask = tf.cast(self.logits > 0.0, x.dtype)
        return x * mask


def make_model():
    return tf.keras.Sequential(
        [
            tf.keras.Input((8,)),
            FeatureGate(name="gate"),
            tf.keras.layers.Dense(16, activation="relu", name="hidden"),
            tf.keras.layers.Dense(1, name="out"),
        ]
    )


def make_data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype("float32")
    y = (x @ rng.normal(size=(8, 1)) + 0.1 * rng.normal(size=(n, 1))).astype("float32")
    return x, y


model = make_model()
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-2)
loss_fn = tf.keras.losses.MeanSquaredError()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        loss = loss_fn(y, pred)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    x_train, y_train = make_data()
    dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(32)
    for epoch in range(args.epochs):
        for x, y in dataset:
            loss = train_step(x, y)
        print(f"epoch {epoch + 1}: loss {float(loss):.4f}")
