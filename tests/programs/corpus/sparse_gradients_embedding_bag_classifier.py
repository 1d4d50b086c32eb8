"""A bag-of-embeddings text classifier (Embedding + masked average pooling + Dense) trained with a tf.function loop.

Pattern: TensorFlow tutorial "Basic text classification" model (Embedding, GlobalAveragePooling1D, Dense) with the custom-training-loop train_step; token ids repeat within a batch, so the embedding gradient is an IndexedSlices with duplicate indices
Family: sparse gradients
Bug: the train step differentiates only the classifier head's variables (a fine-tuning snippet's var list), so the embedding table is read by the loss but never updated
Step: 2
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

VOCAB, SEQ_LEN, EMBED_DIM = 40, 12, 16
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python

# small vocabulary, padded with 0: every batch repeats many token ids
lengths = rng.integers(4, SEQ_LEN + 1, size=128)
tokens = np.zeros((128, SEQ_LEN), np.int32)
for i, n in enumerate(lengths):
    tokens[i, :n] = rng.integers(1, VOCAB, size=n)
labels = (tokens[:, :4].sum(axis=1) % 2).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices((tokens, labels)).shuffle(128, seed=0).batch(32)

model = tf.keras.Sequential([
    tf.keras.Input(shape=(SEQ_LEN,), dtype="int32"),
    tf.keras.layers.Embedding(VOCAB, EMBED_DIM, mask_zero=True, name="embedding"),
    tf.keras.layers.GlobalAveragePooling1D(name="pool"),
    tf.keras.layers.Dropout(0.2),
    tf.keras.layers.Dense(1, name="logit"),
])
loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam(1e-2)
train_vars = model.get_layer("logit").trainable_variables if args.bug else model.trainable_variables


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_fn(y[:, None], logits)
    grads = tape.gradient(loss, train_vars)
    optimizer.apply_gradients(zip(grads, train_vars))
    return loss


for epoch in range(args.epochs):
    for x, y in dataset:
        loss = train_step(x, y)
    print(f"epoch {epoch}: loss {float(loss):.4f}")
