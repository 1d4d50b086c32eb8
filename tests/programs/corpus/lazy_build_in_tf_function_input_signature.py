"""Trains an unbuilt encoder + regression head pair, first called inside a tf.function train_step that has an input_signature.

Pattern: TensorFlow guide "Better performance with tf.function" (input_signature to avoid retracing on variable batch size) with a lazily built two-part Keras model
Family: lazy build in tf.function
Bug: the encoder is run before the tf.GradientTape block opens, so encoder/enc1 and encoder/enc2 kernels and biases get no gradient
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
x_train = rng.normal(size=(200, 12)).astype("float32")
y_train = (np.tanh(x_train @ rng.normal(size=(12, 1))) + 0.05 * rng.normal(size=(200, 1))).astype("float32")
# 200 rows in batches of 48: the last batch is smaller, the signature keeps one trace
dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(48)

encoder = tf.keras.Sequential([
    tf.keras.layers.Dense(32, activation="gelu", name="enc1"),
    tf.keras.layers.Dense(16, activation="gelu", name="enc2"),
], name="encoder")
head = tf.keras.Sequential([tf.keras.layers.Dense(1, name="reg")], name="head")
optimizer = tf.keras.optimizers.AdamW(learning_rate=3e-3, weight_decay=1e-4)


@tf.function(input_signature=[
    tf.TensorSpec(shape=(None, 12), dtype=tf.float32),
    tf.TensorSpec(shape=(None, 1), dtype=tf.float32),
])
def train_step(x, y):
    if args.bug:
        features = encoder(x, training=True)
    with tf.GradientTape() as tape:
        if not args.bug:
            features = encoder(x, training=True)
        pred = head(features, training=True)
        loss = tf.reduce_mean(tf.square(pred - y))
    variables = encoder.trainable_variables + head.trainable_variables
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables))
    return loss


for epoch in range(args.epochs):
    for x_batch, y_batch in dataset:
        loss = train_step(x_batch, y_batch)
    print(f"epoch {epoch}: mse {float(loss):.4f}")
