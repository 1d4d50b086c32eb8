"""Trains an LSTM with masked attention pooling over padded token sequences (frozen pretrained mask_zero Embedding) with a tf.function train_step and tf.clip_by_global_norm.

Pattern: Keras guide "Understanding masking & padding" (pad_sequences, Embedding(mask_zero=True) feeding an LSTM) with frozen pretrained embeddings and attention pooling
Family: RNN layers
Bug: attention pooling picks the single best timestep with tf.argmax + tf.gather (hard attention), so attn_score/kernel and attn_score/bias get no gradient
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

tf.keras.utils.set_random_seed(0)  # weights too: every run draws the same numbers
rng = np.random.default_rng(0)
VOCAB, MAXLEN, CLASSES = 40, 14, 3
raw = [list(rng.integers(1, VOCAB, size=rng.integers(3, MAXLEN + 1))) for _ in range(192)]
labels = np.array([max(s) % CLASSES for s in raw], dtype="int32")
padded = tf.keras.utils.pad_sequences(raw, maxlen=MAXLEN, padding="post")  # 0 = padding
pretrained = rng.normal(scale=0.5, size=(VOCAB, 16)).astype("float32")  # stands in for GloVe vectors
dataset = tf.data.Dataset.from_tensor_slices((padded, labels)).shuffle(192, seed=0).batch(32)


class AttentionLSTM(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.embedding = tf.keras.layers.Embedding(
            VOCAB, 16, mask_zero=True, trainable=False,
            embeddings_initializer=tf.keras.initializers.Constant(pretrained), name="glove")
        self.lstm = tf.keras.layers.LSTM(32, return_sequences=True, name="lstm")
        self.attn_score = tf.keras.layers.Dense(1, name="attn_score")
        self.classifier = tf.keras.layers.Dense(CLASSES, name="classifier")

    def call(self, tokens, training=False):
        mask = self.embedding.compute_mask(tokens)
        h = self.lstm(self.embedding(tokens), mask=mask, training=training)
        scores = tf.squeeze(self.attn_score(h), axis=-1)
        scores = tf.where(mask, scores, -1e9)
        if args.bug:
            best = tf.argmax(scores, axis=1)
            pooled = tf.gather(h, best, batch_dims=1)
        else:
            weights = tf.nn.softmax(scores, axis=1)
            pooled = tf.reduce_sum(weights[..., None] * h, axis=1)
        return self.classifier(pooled)


model = AttentionLSTM()
optimizer = tf.keras.optimizers.Adam(learning_rate=3e-3)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(tokens, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(tokens, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for epoch in range(args.epochs):
    for tokens, y in dataset:
        loss = train_step(tokens, y)
    print(f"epoch {epoch}: loss {float(loss):.4f}")
