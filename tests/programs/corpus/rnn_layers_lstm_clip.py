"""Trains an Embedding + LSTM next-token language model on a synthetic token stream with a tf.function train_step and tf.clip_by_global_norm.

Pattern: TensorFlow tutorial "Text generation with an RNN" (custom training, stateless LSTM over token windows, clipped gradients)
Family: RNN layers
Bug: the custom output layer precomputes its temperature-scaled kernel in build() (a frozen eager copy), so vocab_logits/kernel gets no gradient
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
VOCAB, SEQ_LEN = 20, 12
stream = (np.arange(4000) * 7 + rng.integers(0, 3, size=4000)) % VOCAB
windows = np.stack([stream[i:i + SEQ_LEN + 1] for i in range(0, 3000, 16)]).astype("int32")
dataset = tf.data.Dataset.from_tensor_slices((windows[:, :-1], windows[:, 1:])).batch(32, drop_remainder=True)


class TemperatureDense(tf.keras.layers.Layer):
    """Vocabulary projection divided by a fixed softmax temperature."""

    def __init__(self, units, temperature=2.0, **kwargs):
        super().__init__(**kwargs)
        self.units, self.temperature = units, temperature

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units))
        self.bias = self.add_weight(name="bias", shape=(self.units,), initializer="zeros")
        if args.bug:
            self.scaled_kernel = self.kernel / self.temperature  # computed once, here

    def call(self, x):
        kernel = self.scaled_kernel if args.bug else self.kernel / self.temperature
        return tf.matmul(x, kernel) + self.bias


model = tf.keras.Sequential([
    tf.keras.Input(shape=(SEQ_LEN,), dtype="int32"),
    tf.keras.layers.Embedding(VOCAB, 16, name="embedding"),
    tf.keras.layers.LSTM(32, return_sequences=True, name="lstm"),
    TemperatureDense(VOCAB, name="vocab_logits"),
])
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-2)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(inp, target):
    with tf.GradientTape() as tape:
        predictions = model(inp, training=True)
        loss = loss_fn(target, predictions)
    grads = tape.gradient(loss, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, 5.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(args.epochs):
    for inp, target in dataset:
        loss = train_step(inp, target)
    print(f"Epoch {epoch + 1} Loss {float(loss):.4f}")
