"""A MultiWorkerMirroredStrategy job's training program, one copy per worker (TF_CONFIG names
the task): a custom loop with strategy.run, as Keras 3's fit does not run this strategy."""

import argparse
import json
import os
import time

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--nan-on", type=int, default=None, help="this worker's data holds a NaN")
parser.add_argument("--nan-at", type=int, default=3, help="from this step on")
parser.add_argument("--nan-in", choices=("x", "y"), default="y", help="in the inputs or the targets")
parser.add_argument("--log", default=None, help="folder: each worker appends the steps it finished")
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--fail-on", type=int, default=None, help="this worker's data loader fails")
parser.add_argument("--fail-at", type=int, default=3)
args = parser.parse_args()

strategy = tf.distribute.MultiWorkerMirroredStrategy()
config = json.loads(os.environ["TF_CONFIG"])
task = config["task"]["index"]
if config["task"]["type"] == "worker":  # the chief, where there is one, comes first
    task += len(config["cluster"].get("chief", []))
rng = np.random.default_rng(task)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
    model.build((None, 8))
    optimizer = tf.keras.optimizers.SGD(0.01)
    optimizer.build(model.trainable_variables)


@tf.function
def train_step(x, y):
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    per_replica = strategy.run(step, args=(x, y))
    return strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)


for i in range(1, args.steps + 1):
    if task == args.fail_on and i == args.fail_at:
        raise OSError(f"shard {task} is unreadable")
    x = rng.normal(size=(8, 8)).astype("float32")
    y = rng.normal(size=(8, 1)).astype("float32")
    if task == args.nan_on and i >= args.nan_at:
        (x if args.nan_in == "x" else y)[0, 0] = np.nan  # one bad record in this worker's shard
    loss = train_step(tf.constant(x), tf.constant(y))
    if args.log:
        finite = all(bool(tf.reduce_all(tf.math.is_finite(v))) for v in model.trainable_variables)
        with open(os.path.join(args.log, f"worker-{task}.log"), "a") as f:
            f.write(f"{i} {float(loss)} {'finite' if finite else 'non-finite'}\n")
    if args.sleep:
        time.sleep(args.sleep)
