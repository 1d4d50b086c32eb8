"""A small Transformer classifier with a stray tf.stop_gradient on the attention output.

Token embedding plus a learned position embedding, one encoder block
(MultiHeadAttention, residual, LayerNorm, feed-forward, residual, LayerNorm),
mean pooling and a Dense classifier, trained on random tokens.

The bug: `tf.stop_gradient(attended)` in `Block.call` (meant for a debugging
experiment, left in). The residual still carries a gradient to the embeddings,
LayerNorms, feed-forward and classifier, so the loss goes down and nothing
fails, but the eight MultiHeadAttention weights (query, key, value and output
kernels and biases) never get a gradient. tfviz reports those eight as
disconnected by the StopGradient op, and every other weight connected.
"""

import keras
import tensorflow as tf

VOCAB, SEQ, DIM, HEADS, CLASSES, BATCH = 50, 12, 16, 2, 3, 8


class Block(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.mha = keras.layers.MultiHeadAttention(HEADS, DIM // HEADS, name="mha")
        self.norm1 = keras.layers.LayerNormalization(name="norm1")
        self.ff1 = keras.layers.Dense(2 * DIM, activation="relu", name="ff1")
        self.ff2 = keras.layers.Dense(DIM, name="ff2")
        self.norm2 = keras.layers.LayerNormalization(name="norm2")

    def call(self, x):
        attended = self.mha(x, x)
        attended = tf.stop_gradient(attended)  # the bug: left over from an experiment
        x = self.norm1(x + attended)
        return self.norm2(x + self.ff2(self.ff1(x)))


class TinyTransformer(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.embed = keras.layers.Embedding(VOCAB, DIM, name="embed")
        self.position = keras.layers.Embedding(SEQ, DIM, name="position")
        self.block = Block(name="block")
        self.classifier = keras.layers.Dense(CLASSES, name="classifier")

    def call(self, tokens):
        x = self.embed(tokens) + self.position(tf.range(SEQ))
        x = self.block(x)
        return self.classifier(tf.reduce_mean(x, axis=1))


tf.random.set_seed(0)
model = TinyTransformer(name="tiny_transformer")
tokens = tf.random.uniform([BATCH, SEQ], maxval=VOCAB, dtype=tf.int32)
labels = tf.random.uniform([BATCH], maxval=CLASSES, dtype=tf.int32)
ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def loss():
    return ce(labels, model(tokens))


if __name__ == "__main__":
    model.compile(optimizer="adam", loss=ce)
    model.fit(tokens, labels, epochs=2, verbose=2)
