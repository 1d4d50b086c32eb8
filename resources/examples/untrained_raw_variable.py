"""A tiny VQ-VAE whose codebook never trains.

`VectorQuantizer` keeps its codebook as a plain attribute,
`self.embeddings = tf.Variable(...)`, instead of creating it with
`self.add_weight`. Keras 3 does not track a raw `tf.Variable` attribute, so
the codebook is missing from `vqvae.trainable_variables`. `VQVAETrainer`
(a `keras.Model` with its own `train_step`, run by `fit`) differentiates
`self.vqvae.trainable_variables` only: the encoder and decoder learn, the
codebook stays at its random initial value, and the loss still falls.

The codebook is read by the loss on a differentiable path: the codebook term
`mean((quantized - stop_gradient(z))**2)` depends on it, so TensorFlow would
give it a gradient if asked.

Data: 16-dimensional points around 6 cluster centres. `--epochs` (default 2).
"""

import argparse

import keras
import numpy as np
import tensorflow as tf

DATA_DIM = 16
LATENT_DIM = 4
NUM_CODES = 8


class VectorQuantizer(keras.layers.Layer):
    """Snaps each latent vector to its nearest codebook entry (straight-through)."""

    def __init__(self, num_embeddings, embedding_dim, beta=0.25, **kwargs):
        super().__init__(**kwargs)
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.beta = beta
        init = tf.random_uniform_initializer(-1.0, 1.0, seed=1)
        self.embeddings = tf.Variable(
            init(shape=(num_embeddings, embedding_dim), dtype="float32"), trainable=True, name="embeddings"
        )

    def call(self, z):
        distances = (
            tf.reduce_sum(z**2, axis=1, keepdims=True)
            - 2.0 * tf.matmul(z, self.embeddings, transpose_b=True)
            + tf.reduce_sum(self.embeddings**2, axis=1)
        )
        codes = tf.argmin(distances, axis=1)
        quantized = tf.gather(self.embeddings, codes)
        commitment_loss = tf.reduce_mean((tf.stop_gradient(quantized) - z) ** 2)
        codebook_loss = tf.reduce_mean((quantized - tf.stop_gradient(z)) ** 2)
        vq_loss = self.beta * commitment_loss + codebook_loss
        straight_through = z + tf.stop_gradient(quantized - z)
        return straight_through, vq_loss


class VQVAE(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.encoder = keras.Sequential(
            [keras.layers.Dense(32, activation="relu"), keras.layers.Dense(LATENT_DIM)], name="encoder"
        )
        self.quantizer = VectorQuantizer(NUM_CODES, LATENT_DIM, name="vector_quantizer")
        self.decoder = keras.Sequential(
            [keras.layers.Dense(32, activation="relu"), keras.layers.Dense(DATA_DIM)], name="decoder"
        )

    def call(self, x):
        z = self.encoder(x)
        quantized, vq_loss = self.quantizer(z)
        return self.decoder(quantized), vq_loss


class VQVAETrainer(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.vqvae = VQVAE(name="vqvae")
        self.loss_tracker = keras.metrics.Mean(name="loss")

    def call(self, x):
        return self.vqvae(x)[0]

    @property
    def metrics(self):
        return [self.loss_tracker]

    def train_step(self, x):
        with tf.GradientTape() as tape:
            reconstruction, vq_loss = self.vqvae(x, training=True)
            reconstruction_loss = tf.reduce_mean((x - reconstruction) ** 2)
            total_loss = reconstruction_loss + vq_loss
        grads = tape.gradient(total_loss, self.vqvae.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.vqvae.trainable_variables))
        self.loss_tracker.update_state(total_loss)
        return {"loss": self.loss_tracker.result()}


def make_data(n=512, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(6, DATA_DIM))
    labels = rng.integers(0, 6, size=n)
    return (centres[labels] + 0.1 * rng.normal(size=(n, DATA_DIM))).astype("float32")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    trainer = VQVAETrainer()
    trainer.compile(optimizer=keras.optimizers.Adam(1e-3))
    codebook_before = trainer.vqvae.quantizer.embeddings.numpy().copy()
    trainer.fit(make_data(), batch_size=64, epochs=args.epochs, verbose=2)
    unchanged = np.array_equal(codebook_before, trainer.vqvae.quantizer.embeddings.numpy())
    print(f"codebook unchanged after training: {unchanged}")
