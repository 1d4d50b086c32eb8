"""Trains a stacked SimpleRNN(return_sequences=True) -> LSTM forecaster on a synthetic noisy sine wave with a tf.function train_step and tf.clip_by_global_norm.

Pattern: TensorFlow tutorial "Time series forecasting" (stacked recurrent layers, the lower one returning sequences) with a custom clipped training loop
Family: RNN layers
Bug: the lower layer's sequence output is wrapped in tf.stop_gradient before the LSTM, so rnn1 (simple_rnn kernel, recurrent_kernel, bias) gets no gradient
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
WINDOW = 20
t = np.arange(2000, dtype="float32")
series = np.sin(0.07 * t) + 0.5 * np.sin(0.23 * t) + 0.1 * rng.normal(size=t.shape)
starts = rng.integers(0, len(series) - WINDOW - 1, size=192)
x_train = np.stack([series[s:s + WINDOW] for s in starts])[..., None].astype("float32")
y_train = np.array([series[s + WINDOW] for s in starts])[:, None].astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(192, seed=0).batch(32)


class Forecaster(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.rnn1 = tf.keras.layers.SimpleRNN(16, return_sequences=True, name="rnn1")
        self.rnn2 = tf.keras.layers.LSTM(16, name="rnn2")
        self.out = tf.keras.layers.Dense(1, name="out")

    def call(self, x, training=False):
        h = self.rnn1(x, training=training)
        if args.bug:
            h = tf.stop_gradient(h)
        return self.out(self.rnn2(h, training=training))


model = Forecaster()
optimizer = tf.keras.optimizers.RMSprop(learning_rate=1e-3)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        loss = tf.reduce_mean(tf.keras.losses.huber(y, pred))
    grads = tape.gradient(loss, model.trainable_variables)
    clipped, _ = tf.clip_by_global_norm(grads, clip_norm=1.0)
    optimizer.apply_gradients(zip(clipped, model.trainable_variables))
    return loss


for epoch in range(args.epochs):
    for x_batch, y_batch in dataset:
        loss = train_step(x_batch, y_batch)
    print(f"epoch {epoch}: huber {float(loss):.4f}")
