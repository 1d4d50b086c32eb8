"""A deep residual MLP regressor whose pre-norm residual blocks are wrapped in tf.recompute_grad (gradient checkpointing), trained with a tf.function loop.

During the outer tape.gradient each recompute_grad wrapper re-runs its block under its own inner
tape (3 inner tape.gradient calls); those are part of the outer computation, so each train step
makes one gradient computation and Step 2 is the second train step's.

Pattern: gradient checkpointing with tf.recompute_grad (TensorFlow API docs example; TF Model Garden / T5X-style "remat" of each residual block) around Keras layers built before wrapping, custom GradientTape train step
Family: custom_gradient and recompute_grad
Bug: the wrappers are built with `lambda h: block(h, training=True)` in a list comprehension (late binding), so every wrapper calls the last block; the first two blocks' variables are never read and get None gradients
Step: 2
Update: 2
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--steps", type=int, default=4)
args = parser.parse_args()

rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
DIM, DEPTH = 32, 3
x_train = rng.normal(size=(256, 10)).astype(np.float32)
y_train = np.sin(x_train[:, :1] * 2.0) + 0.1 * x_train[:, 1:2] ** 2


class ResidualBlock(tf.keras.layers.Layer):
    def __init__(self, dim, **kwargs):
        super().__init__(**kwargs)
        self.norm = tf.keras.layers.LayerNormalization()
        self.fc1 = tf.keras.layers.Dense(4 * dim, activation="gelu")
        self.fc2 = tf.keras.layers.Dense(dim)
        self.dropout = tf.keras.layers.Dropout(0.1)

    def call(self, x, training=False):
        return x + self.dropout(self.fc2(self.fc1(self.norm(x))), training=training)


stem = tf.keras.layers.Dense(DIM, name="stem")
blocks = [ResidualBlock(DIM, name=f"block{i}") for i in range(DEPTH)]
head = tf.keras.layers.Dense(1, name="head")

# build every layer once, eagerly, before wrapping (recompute_grad must not create variables)
h = stem(x_train[:2])
for block in blocks:
    h = block(h)
head(h)

if args.bug:
    checkpointed = [tf.recompute_grad(lambda h: block(h, training=True)) for block in blocks]
else:
    checkpointed = [tf.recompute_grad(lambda h, block=block: block(h, training=True)) for block in blocks]

variables = stem.trainable_variables + [v for b in blocks for v in b.trainable_variables] + head.trainable_variables
optimizer = tf.keras.optimizers.AdamW(learning_rate=3e-3, weight_decay=1e-4)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        h = stem(x)
        for block_fn in checkpointed:
            h = block_fn(h)
        loss = tf.reduce_mean(tf.square(head(h) - y))
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables))
    return loss


for step in range(args.steps):
    idx = rng.integers(0, len(x_train), size=64)
    loss = train_step(x_train[idx], y_train[idx])
    print(f"step {step}: mse {float(loss):.4f}")
