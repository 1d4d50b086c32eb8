"""A one-block Transformer encoder text classifier (token + position embedding, MultiHeadAttention, LayerNorm, FFN) trained with fit on synthetic token sequences.

Pattern: Keras example "Text classification with Transformer" (apoorvnandan): TransformerBlock and TokenAndPositionEmbedding layers, GlobalAveragePooling1D, Dense softmax head, compile/fit
Family: Transformer blocks
Bug: TokenAndPositionEmbedding.call computes the position embeddings but returns only the token embeddings (`return x`), so pos_emb's embeddings get a None gradient
Step: 3
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
args = parser.parse_args()

VOCAB_SIZE, MAXLEN, EMBED_DIM, NUM_HEADS, FF_DIM = 100, 16, 16, 2, 32
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
x_train = rng.integers(1, VOCAB_SIZE, size=(128, MAXLEN)).astype(np.int32)
y_train = (x_train[:, 0] < x_train[:, -1]).astype(np.int32)  # order matters: needs positions


class TransformerBlock(tf.keras.layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1, **kwargs):
        super().__init__(**kwargs)
        self.att = tf.keras.layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = tf.keras.Sequential([tf.keras.layers.Dense(ff_dim, activation="relu"),
                                        tf.keras.layers.Dense(embed_dim)])
        self.layernorm1 = tf.keras.layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = tf.keras.layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = tf.keras.layers.Dropout(rate)
        self.dropout2 = tf.keras.layers.Dropout(rate)

    def call(self, inputs, training=False):
        attn_output = self.att(inputs, inputs)
        out1 = self.layernorm1(inputs + self.dropout1(attn_output, training=training))
        ffn_output = self.ffn(out1)
        return self.layernorm2(out1 + self.dropout2(ffn_output, training=training))


class TokenAndPositionEmbedding(tf.keras.layers.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.token_emb = tf.keras.layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = tf.keras.layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        maxlen = tf.shape(x)[-1]
        positions = self.pos_emb(tf.range(start=0, limit=maxlen, delta=1))
        x = self.token_emb(x)
        if args.bug:
            return x
        return x + positions


inputs = tf.keras.layers.Input(shape=(MAXLEN,))
x = TokenAndPositionEmbedding(MAXLEN, VOCAB_SIZE, EMBED_DIM)(inputs)
x = TransformerBlock(EMBED_DIM, NUM_HEADS, FF_DIM)(x)
x = tf.keras.layers.GlobalAveragePooling1D()(x)
x = tf.keras.layers.Dropout(0.1)(x)
x = tf.keras.layers.Dense(20, activation="relu")(x)
outputs = tf.keras.layers.Dense(2, activation="softmax")(x)
model = tf.keras.Model(inputs=inputs, outputs=outputs)

model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history = model.fit(x_train, y_train, batch_size=32, epochs=1, verbose=0)
print("accuracy:", round(history.history["accuracy"][-1], 4))
