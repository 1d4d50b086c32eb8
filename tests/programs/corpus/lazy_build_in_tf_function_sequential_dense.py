"""Trains an unbuilt Sequential MLP classifier on synthetic features with a tf.function custom training loop.

Pattern: TensorFlow tutorial "Writing a training loop from scratch" (unbuilt Sequential of Dense layers, first called inside @tf.function train_step, tf.data.Dataset, 2 epochs)
Family: lazy build in tf.function
Bug: the kernel-only list meant for the L2 penalty is also used as the var list, so the biases (hidden1/bias, hidden2/bias, logits/bias) are never updated
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
rng = np.random.default_rng(0)
x_train = rng.normal(size=(256, 20)).astype("float32")
y_train = (x_train[:, :5].sum(axis=1) > 0).astype("int64") + (x_train[:, 5] > 1).astype("int64")
train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(256, seed=0).batch(32)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(32, activation="relu", name="hidden1"),
    tf.keras.layers.Dense(32, activation="relu", name="hidden2"),
    tf.keras.layers.Dense(3, name="logits"),
])
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
train_acc = tf.keras.metrics.SparseCategoricalAccuracy()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        kernels = [v for v in model.trainable_variables if "kernel" in v.name]
        loss = loss_fn(y, logits) + 1e-4 * tf.add_n([tf.nn.l2_loss(k) for k in kernels])
    variables = kernels if args.bug else model.trainable_variables
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables))
    train_acc.update_state(y, logits)
    return loss


for epoch in range(args.epochs):
    for step, (x_batch, y_batch) in enumerate(train_dataset):
        loss = train_step(x_batch, y_batch)
    print(f"epoch {epoch}: loss {float(loss):.4f} acc {float(train_acc.result()):.3f}")
    train_acc.reset_state()
