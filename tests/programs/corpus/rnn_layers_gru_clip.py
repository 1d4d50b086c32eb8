"""Trains a GRU sequence classifier on synthetic multivariate time series with a tf.function train_step and gradient clipping by global norm.

Pattern: Keras example "Timeseries classification" with a custom training loop (GRU, @tf.function train_step, tf.clip_by_global_norm)
Family: RNN layers
Bug: the GRU's final state is quantized with tf.round before the classifier ("discretized features"), so the GRU kernel, recurrent_kernel and bias get no gradient
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
TIMESTEPS, FEATURES = 16, 3
x_train = rng.normal(size=(160, TIMESTEPS, FEATURES)).astype("float32")
y_train = (np.cumsum(x_train[:, :, 0], axis=1)[:, -1] > 0).astype("int32")
dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(160, seed=0).batch(32)

inputs = tf.keras.Input(shape=(TIMESTEPS, FEATURES))
state = tf.keras.layers.GRU(24, name="gru")(inputs)
if args.bug:
    state = tf.keras.layers.Lambda(lambda s: tf.round(s * 4.0) / 4.0, name="quantize")(state)
outputs = tf.keras.layers.Dense(2, name="classifier")(state)
model = tf.keras.Model(inputs, outputs)

optimizer = tf.keras.optimizers.Adam(learning_rate=5e-3)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_fn(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    grads, global_norm = tf.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss, global_norm


for epoch in range(args.epochs):
    for x_batch, y_batch in dataset:
        loss, norm = train_step(x_batch, y_batch)
    print(f"epoch {epoch}: loss {float(loss):.4f} grad norm {float(norm):.3f}")
