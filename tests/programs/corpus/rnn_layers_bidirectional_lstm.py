"""Trains a Bidirectional(LSTM) sentiment-style classifier on synthetic token sequences with a tf.function train_step and tf.clip_by_global_norm.

Pattern: Keras example "Bidirectional LSTM on IMDB" (Embedding -> Bidirectional(LSTM) -> Dense) with a custom clipped training loop
Family: RNN layers
Bug: the Bidirectional layer returns [forward, backward] (merge_mode=None) and only outputs[0] is used, so the backward LSTM (backward_lstm kernel, recurrent_kernel, bias) gets no gradient
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
VOCAB, MAXLEN = 50, 16
x_train = rng.integers(1, VOCAB, size=(192, MAXLEN)).astype("int32")
y_train = ((x_train < 10).sum(axis=1) > (x_train >= 40).sum(axis=1)).astype("float32")[:, None]
dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(192, seed=0).batch(32)

inputs = tf.keras.Input(shape=(MAXLEN,), dtype="int32")
x = tf.keras.layers.Embedding(VOCAB, 16, name="embedding")(inputs)
if args.bug:
    outputs = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(16), merge_mode=None, name="bilstm")(x)
    x = outputs[0]
else:
    x = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(16), name="bilstm")(x)
outputs = tf.keras.layers.Dense(1, activation="sigmoid", name="score")(x)
model = tf.keras.Model(inputs, outputs)

optimizer = tf.keras.optimizers.Adam(learning_rate=5e-3)
loss_fn = tf.keras.losses.BinaryCrossentropy()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        probs = model(x, training=True)
        loss = loss_fn(y, probs)
    grads = tape.gradient(loss, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(args.epochs):
    for x_batch, y_batch in dataset:
        loss = train_step(x_batch, y_batch)
    print(f"epoch {epoch}: loss {float(loss):.4f}")
