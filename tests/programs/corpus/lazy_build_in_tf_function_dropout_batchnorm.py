"""Trains an unbuilt Sequential MLP with BatchNormalization and Dropout, first called with training=True inside a tf.function train_step.

Pattern: Keras guide "Writing a training loop from scratch" with a BatchNorm/Dropout MLP (lazily built Sequential, moving statistics updated in the traced step)
Family: lazy build in tf.function
Bug: the hidden activation is a hard binary step (tf.cast(x > 0, float32)), so fc1/kernel, fc1/bias, bn1/gamma and bn1/beta get no gradient
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
x_train = rng.normal(loc=2.0, scale=3.0, size=(256, 16)).astype("float32")
y_train = (np.sin(x_train[:, 0]) + 0.5 * x_train[:, 1] > 1.0).astype("float32")[:, None]
dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(256, seed=0).batch(64)


def binary_step(t):
    return tf.cast(t > 0, t.dtype)


model = tf.keras.Sequential([
    tf.keras.layers.Dense(32, name="fc1"),
    tf.keras.layers.BatchNormalization(name="bn1"),
    tf.keras.layers.Activation(binary_step if args.bug else "relu"),
    tf.keras.layers.Dropout(0.2),
    tf.keras.layers.Dense(16, activation="relu", name="fc2"),
    tf.keras.layers.Dropout(0.2),
    tf.keras.layers.Dense(1, name="out"),
])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)
loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_fn(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(args.epochs):
    for x_batch, y_batch in dataset:
        loss = train_step(x_batch, y_batch)
    bn = model.get_layer("bn1")
    print(f"epoch {epoch}: loss {float(loss):.4f} "
          f"bn moving_mean[0] {float(bn.moving_mean[0]):.3f} moving_var[0] {float(bn.moving_variance[0]):.3f}")
