"""A two-tower model whose gradients are applied to the wrong tower.

`TwoTower` scores a (query, item) pair as the dot product of two embeddings,
one from `query_tower` and one from `item_tower`; both towers have the same
layer shapes. The plan is to keep the item tower fixed for a warm-up phase and
train only the query tower, so `train_step` (a `tf.function`) differentiates
`model.query_tower.trainable_variables`. But the update line was copied from
elsewhere and zips those gradients with `model.item_tower.trainable_variables`.
The shapes agree, so nothing raises: the query tower, which the loss reads and
which was differentiated, never changes, and the item tower, which was meant to
stay fixed, moves with the query tower's gradients.

Data: random 6-feature queries and items, labelled by a hidden bilinear
relevance score. `--epochs` (default 2).
"""

import argparse

import keras
import numpy as np
import tensorflow as tf


def tower(name):
    return keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(16, activation="relu", name=f"{name}_hidden"),
            keras.layers.Dense(8, name=f"{name}_embed"),
        ],
        name=name,
    )


class TwoTower(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.query_tower = tower("query_tower")
        self.item_tower = tower("item_tower")

    def call(self, inputs):
        query, item = inputs
        return tf.reduce_sum(self.query_tower(query) * self.item_tower(item), axis=-1)


def make_data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(n, 6)).astype("float32")
    item = rng.normal(size=(n, 6)).astype("float32")
    relevance = np.einsum("ni,ij,nj->n", query, rng.normal(size=(6, 6)), item)
    return query, item, (relevance > 0).astype("float32")


keras.utils.set_random_seed(0)
model = TwoTower(name="two_tower")
optimizer = keras.optimizers.Adam(learning_rate=1e-2)
loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)


@tf.function
def train_step(query, item, label):
    with tf.GradientTape() as tape:
        logits = model((query, item), training=True)
        loss = loss_fn(label, logits)
    grads = tape.gradient(loss, model.query_tower.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.item_tower.trainable_variables))
    return loss


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    dataset = tf.data.Dataset.from_tensor_slices(make_data()).batch(32)
    for epoch in range(args.epochs):
        for query, item, label in dataset:
            loss = train_step(query, item, label)
        print(f"epoch {epoch + 1}: loss {float(loss):.4f}")
