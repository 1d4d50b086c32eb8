"""MirroredStrategy over two local devices (logical CPUs here, GPUs where there are any)."""
import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--nan-replica", type=int, default=None, help="this replica's data turns NaN")
parser.add_argument("--nan-at", type=int, default=3)
args = parser.parse_args()

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
rng = np.random.default_rng(0)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
    model.build((None, 8))
    optimizer = tf.keras.optimizers.SGD(0.01)
    optimizer.build(model.trainable_variables)


@tf.function
def train_step(batch):
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    per_replica = strategy.run(step, args=batch)
    return strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)


for i in range(1, args.steps + 1):
    shards = []
    for r in range(2):
        x = rng.normal(size=(4, 8)).astype("float32")
        if r == args.nan_replica and i >= args.nan_at:
            x[1, 2] = np.inf  # one bad record in this replica's shard
        shards.append((x, rng.normal(size=(4, 1)).astype("float32")))

    def shard(ctx, shards=shards):
        return tuple(tf.constant(a) for a in shards[ctx.replica_id_in_sync_group])

    batch = strategy.experimental_distribute_values_from_function(shard)
    loss = train_step(batch)
    print(f"step {i} loss {float(loss):.4f}", flush=True)
