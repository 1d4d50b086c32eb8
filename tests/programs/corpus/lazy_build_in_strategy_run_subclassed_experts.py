"""Trains an unbuilt subclassed two-expert regression model with MirroredStrategy over 2 logical CPUs, first called inside strategy.run in a tf.function.

Pattern: TensorFlow tutorial "Custom training with tf.distribute.Strategy" (subclassed model under strategy.scope(), experimental_distribute_dataset, distributed_train_step, tf.nn.compute_average_loss)
Family: lazy build in strategy.run
Bug: the soft gate is replaced by a hard tf.argmax routing (tf.where on the chosen expert), so gate/kernel and gate/bias get no gradient
"""

import argparse

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
rng = np.random.default_rng(0)
x_train = rng.normal(size=(256, 8)).astype("float32")
y_train = np.where(x_train[:, :1] > 0, x_train[:, 1:2] * 2.0, -x_train[:, 2:3]).astype("float32")

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
GLOBAL_BATCH_SIZE = 32 * strategy.num_replicas_in_sync
dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(256, seed=0).batch(GLOBAL_BATCH_SIZE)
dist_dataset = strategy.experimental_distribute_dataset(dataset)


class TwoExpertRegressor(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.gate = tf.keras.layers.Dense(2, name="gate")
        self.expert_a = tf.keras.layers.Dense(1, name="expert_a")
        self.expert_b = tf.keras.layers.Dense(1, name="expert_b")

    def call(self, x):
        outputs = tf.concat([self.expert_a(x), self.expert_b(x)], axis=-1)
        logits = self.gate(x)
        if args.bug:
            choice = tf.argmax(logits, axis=-1)
            return tf.where(tf.equal(choice, 0)[:, None], outputs[:, :1], outputs[:, 1:])
        weights = tf.nn.softmax(logits, axis=-1)
        return tf.reduce_sum(weights * outputs, axis=-1, keepdims=True)


with strategy.scope():
    model = TwoExpertRegressor()
    optimizer = tf.keras.optimizers.Adam(learning_rate=1e-2)


def train_step(inputs):
    x, y = inputs
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        per_example_loss = tf.reduce_mean(tf.square(pred - y), axis=-1)
        loss = tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def eval_step(inputs):
    x, y = inputs
    per_example_loss = tf.reduce_mean(tf.square(model(x, training=False) - y), axis=-1)
    return tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)


@tf.function
def distributed_train_step(dataset_inputs):
    per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


@tf.function
def distributed_eval_step(dataset_inputs):
    per_replica_losses = strategy.run(eval_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


# The model's first call (its build) happens in this baseline evaluation, inside strategy.run.
print(f"Initial loss: {float(distributed_eval_step(next(iter(dist_dataset)))):.4f}")
# Keras 3 cannot create the optimizer's slot variables inside the replica function.
with strategy.scope():
    optimizer.build(model.trainable_variables)


for epoch in range(args.epochs):
    total_loss, num_batches = 0.0, 0
    for batch in dist_dataset:
        total_loss += distributed_train_step(batch)
        num_batches += 1
    print(f"Epoch {epoch + 1}, Loss: {float(total_loss / num_batches):.4f}")
