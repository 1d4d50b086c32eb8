"""A small CNN fine-tuned (backbone unfrozen after a frozen warm-up) with gradients accumulated over 4 micro-batches into tf.Variable accumulators and applied once per step, in a tf.function.

Pattern: gradient accumulation in a custom TF2 loop (accumulators = [tf.Variable(tf.zeros_like(v), trainable=False)], assign_add per micro-batch, one optimizer.apply_gradients, then reset), with the transfer-learning guide's "freeze the base model, then unfreeze it for fine-tuning"
Family: gradient accumulation
Bug: the backbone is unfrozen only after `train_vars` and the accumulators were built from model.trainable_variables, so the backbone's conv kernels/biases are read by the loss but never differentiated nor updated
Step: 5
Update: 2
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--steps", type=int, default=3)
args = parser.parse_args()

ACCUM_STEPS, MICRO_BATCH = 4, 8
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
images = rng.normal(size=(ACCUM_STEPS * MICRO_BATCH * args.steps, 16, 16, 3)).astype(np.float32)
labels = rng.integers(0, 3, size=len(images)).astype(np.int32)

backbone = tf.keras.Sequential([
    tf.keras.Input(shape=(16, 16, 3)),
    tf.keras.layers.Conv2D(16, 3, activation="relu", padding="same"),
    tf.keras.layers.MaxPooling2D(),
    tf.keras.layers.Conv2D(32, 3, activation="relu", padding="same"),
    tf.keras.layers.GlobalAveragePooling2D(),
], name="backbone")
backbone.trainable = False  # frozen during the (skipped) warm-up of the head
model = tf.keras.Sequential([backbone, tf.keras.layers.Dropout(0.2), tf.keras.layers.Dense(3, name="head")])

if not args.bug:
    backbone.trainable = True  # unfreeze for fine-tuning before collecting the variables
train_vars = model.trainable_variables
accumulators = [tf.Variable(tf.zeros_like(v), trainable=False) for v in train_vars]
if args.bug:
    backbone.trainable = True

optimizer = tf.keras.optimizers.Adam(1e-4)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    total = 0.0
    for i in range(ACCUM_STEPS):
        x_micro, y_micro = x[i * MICRO_BATCH:(i + 1) * MICRO_BATCH], y[i * MICRO_BATCH:(i + 1) * MICRO_BATCH]
        with tf.GradientTape() as tape:
            loss = loss_fn(y_micro, model(x_micro, training=True))
        grads = tape.gradient(loss, train_vars)
        for acc, g in zip(accumulators, grads):
            acc.assign_add(g / ACCUM_STEPS)
        total += loss / ACCUM_STEPS
    optimizer.apply_gradients(zip([acc.read_value() for acc in accumulators], train_vars))
    for acc in accumulators:
        acc.assign(tf.zeros_like(acc))
    return total


batch = ACCUM_STEPS * MICRO_BATCH
for step in range(args.steps):
    loss = train_step(images[step * batch:(step + 1) * batch], labels[step * batch:(step + 1) * batch])
    print(f"step {step}: loss {float(loss):.4f}")
