"""A word2vec skip-gram model trained eagerly with tf.nn.nce_loss on (target, context) pairs from a synthetic corpus.

Pattern: TensorFlow 1.x "word2vec_basic" / TF2 eager port (embeddings = tf.Variable, tf.nn.embedding_lookup, nce_weights / nce_biases, tf.nn.nce_loss, eager GradientTape loop)
Family: sparse gradients
Bug: the embedding lookup is hoisted out of the `with tf.GradientTape()` block (computed once per batch before recording), so `embeddings` gets a None gradient; nce_weights / nce_biases stay connected
Step: 3
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--steps", type=int, default=6)
args = parser.parse_args()

VOCAB, EMBED_DIM, NUM_SAMPLED, WINDOW, BATCH = 200, 32, 16, 2, 64
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python

# Zipf-distributed corpus: frequent words repeat many times in every batch
corpus = np.minimum(rng.zipf(1.3, size=4000), VOCAB) - 1
pairs = [(corpus[i], corpus[j]) for i in range(WINDOW, len(corpus) - WINDOW)
         for j in range(i - WINDOW, i + WINDOW + 1) if j != i]
pairs = np.array(pairs, np.int64)
rng.shuffle(pairs)

embeddings = tf.Variable(tf.random.uniform([VOCAB, EMBED_DIM], -1.0, 1.0), name="embeddings")
nce_weights = tf.Variable(tf.random.truncated_normal([VOCAB, EMBED_DIM], stddev=1.0 / EMBED_DIM ** 0.5),
                          name="nce_weights")
nce_biases = tf.Variable(tf.zeros([VOCAB]), name="nce_biases")
optimizer = tf.keras.optimizers.SGD(learning_rate=1.0)
variables = [embeddings, nce_weights, nce_biases]

for step in range(args.steps):
    batch = pairs[step * BATCH:(step + 1) * BATCH]
    train_inputs, train_labels = batch[:, 0], batch[:, 1:2]
    if args.bug:
        embed = tf.nn.embedding_lookup(embeddings, train_inputs)
    with tf.GradientTape() as tape:
        if not args.bug:
            embed = tf.nn.embedding_lookup(embeddings, train_inputs)
        loss = tf.reduce_mean(tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=train_labels,
                                             inputs=embed, num_sampled=NUM_SAMPLED, num_classes=VOCAB))
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables))
    print(f"step {step}: nce loss {float(loss):.3f}")
