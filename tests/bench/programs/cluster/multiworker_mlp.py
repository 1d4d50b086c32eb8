"""A small MultiWorkerMirroredStrategy job for the multi-worker benchmark: an MLP trained with a
custom loop for --steps steps; with --log, each worker appends the time each step ended."""

import argparse
import json
import os
import time

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--log", default=None)
args = parser.parse_args()

strategy = tf.distribute.MultiWorkerMirroredStrategy()
task = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
rng = np.random.default_rng(task)
x_all = rng.normal(size=(4096, 32)).astype("float32")
y_all = rng.integers(0, 10, size=(4096,))

with strategy.scope():
    model = tf.keras.Sequential(
        [
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(128, activation="relu"),
            tf.keras.layers.Dense(10),
        ]
    )
    model.build((None, 32))
    optimizer = tf.keras.optimizers.Adam(1e-3)
    optimizer.build(model.trainable_variables)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return strategy.reduce(tf.distribute.ReduceOp.MEAN, strategy.run(step, args=(x, y)), axis=None)


ends = []
for i in range(args.steps):
    at = (i * 64) % 4096
    train_step(tf.constant(x_all[at : at + 64]), tf.constant(y_all[at : at + 64]))
    ends.append(time.perf_counter())
if args.log:
    with open(os.path.join(args.log, f"worker-{task}.times"), "w") as f:
        f.write("\n".join(map(str, ends)))
