"""Trains an unbuilt Sequential classifier with MirroredStrategy over 2 logical CPUs, first called inside strategy.run in a tf.function.

Pattern: TensorFlow tutorial "Custom training with tf.distribute.Strategy" (strategy.scope(), experimental_distribute_dataset, distributed_train_step, tf.nn.compute_average_loss)
Family: lazy build in strategy.run
Bug: gradients and updates use a wrong slice, model.trainable_variables[2:], so hidden/kernel and hidden/bias are never updated
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
x_train = rng.normal(size=(256, 10)).astype("float32")
y_train = np.argmax(x_train[:, :4], axis=1).astype("int64")
x_test, y_test = x_train[:64], y_train[:64]

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
print("Number of devices:", strategy.num_replicas_in_sync)
BATCH_SIZE_PER_REPLICA = 32
GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync
train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(256, seed=0).batch(GLOBAL_BATCH_SIZE)
train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)
test_dataset = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(GLOBAL_BATCH_SIZE)
test_dist_dataset = strategy.experimental_distribute_dataset(test_dataset)

with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(32, activation="relu", name="hidden"),
        tf.keras.layers.Dense(4, name="logits"),
    ])
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE)
    optimizer = tf.keras.optimizers.Adam(learning_rate=1e-2)
    test_loss = tf.keras.metrics.Mean(name="test_loss")


def compute_loss(labels, predictions):
    per_example_loss = loss_object(labels, predictions)
    return tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)


def train_step(inputs):
    images, labels = inputs
    with tf.GradientTape() as tape:
        predictions = model(images, training=True)
        loss = compute_loss(labels, predictions)
    variables = model.trainable_variables[2:] if args.bug else model.trainable_variables
    gradients = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(gradients, variables))
    return loss


def test_step(inputs):
    images, labels = inputs
    predictions = model(images, training=False)
    test_loss.update_state(loss_object(labels, predictions))


@tf.function
def distributed_train_step(dataset_inputs):
    per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


@tf.function
def distributed_test_step(dataset_inputs):
    return strategy.run(test_step, args=(dataset_inputs,))


def evaluate():
    test_loss.reset_state()
    for x in test_dist_dataset:
        distributed_test_step(x)
    return float(test_loss.result())


# Baseline evaluation: the model's first call (and build) happens here, inside strategy.run.
print(f"Before training, Test Loss: {evaluate():.4f}")
# Keras 3 cannot create the optimizer's slots inside the replica function, so build it here.
with strategy.scope():
    optimizer.build(model.trainable_variables)

for epoch in range(args.epochs):
    total_loss, num_batches = 0.0, 0
    for x in train_dist_dataset:
        total_loss += distributed_train_step(x)
        num_batches += 1
    print(f"Epoch {epoch + 1}, Loss: {float(total_loss / num_batches):.4f}, Test Loss: {evaluate():.4f}")
