"""A variational autoencoder on binarized synthetic vectors whose KL divergence is added with self.add_loss() inside the model, trained with fit and a binary cross-entropy reconstruction loss.

Pattern: TensorFlow/Keras guide "Making new layers and models via subclassing", end-to-end example "VariationalAutoEncoder" (Sampling layer, Encoder/Decoder layers, `self.add_loss(kl_loss)` in call, compile(loss=...) + fit(x, x))
Family: Keras compute_loss and add_loss
Bug: the decoder rounds its sigmoid output to {0, 1} "to match the binarized data" (tf.round), so the decoder's dense_proj / dense_output variables get None gradients; the encoder still trains through the KL term
Step: 2
Norms: healthy - the Sampling layer's tf.random.normal draws from an op seed that depends on how many ops its graph holds before it: tfviz's trace of train_step is not Keras' own, so its noise, and the encoder's gradient sizes (by about 1 %), differ
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
args = parser.parse_args()

ORIGINAL_DIM, INTERMEDIATE_DIM, LATENT_DIM = 64, 32, 4
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
prototypes = rng.random(size=(5, ORIGINAL_DIM))
x_train = (prototypes[rng.integers(0, 5, size=256)] + 0.2 * rng.normal(size=(256, ORIGINAL_DIM)) > 0.5)
x_train = x_train.astype(np.float32)


class Sampling(tf.keras.layers.Layer):
    """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

    def call(self, inputs):
        z_mean, z_log_var = inputs
        epsilon = tf.random.normal(shape=tf.shape(z_mean))
        return z_mean + tf.exp(0.5 * z_log_var) * epsilon


class Encoder(tf.keras.layers.Layer):
    def __init__(self, latent_dim, intermediate_dim, name="encoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.dense_proj = tf.keras.layers.Dense(intermediate_dim, activation="relu")
        self.dense_mean = tf.keras.layers.Dense(latent_dim)
        self.dense_log_var = tf.keras.layers.Dense(latent_dim)
        self.sampling = Sampling()

    def call(self, inputs):
        x = self.dense_proj(inputs)
        z_mean, z_log_var = self.dense_mean(x), self.dense_log_var(x)
        return z_mean, z_log_var, self.sampling((z_mean, z_log_var))


class Decoder(tf.keras.layers.Layer):
    def __init__(self, original_dim, intermediate_dim, name="decoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.dense_proj = tf.keras.layers.Dense(intermediate_dim, activation="relu")
        self.dense_output = tf.keras.layers.Dense(original_dim, activation="sigmoid")

    def call(self, inputs):
        probs = self.dense_output(self.dense_proj(inputs))
        return tf.round(probs) if args.bug else probs


class VariationalAutoEncoder(tf.keras.Model):
    def __init__(self, original_dim, intermediate_dim=64, latent_dim=32, name="autoencoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.encoder = Encoder(latent_dim=latent_dim, intermediate_dim=intermediate_dim)
        self.decoder = Decoder(original_dim, intermediate_dim=intermediate_dim)

    def call(self, inputs):
        z_mean, z_log_var, z = self.encoder(inputs)
        reconstructed = self.decoder(z)
        kl_loss = -0.5 * tf.reduce_mean(z_log_var - tf.square(z_mean) - tf.exp(z_log_var) + 1)
        self.add_loss(kl_loss)
        return reconstructed


vae = VariationalAutoEncoder(ORIGINAL_DIM, INTERMEDIATE_DIM, LATENT_DIM)
vae.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=1e-3), loss=tf.keras.losses.BinaryCrossentropy())
history = vae.fit(x_train, x_train, epochs=2, batch_size=64, verbose=0)
print("loss:", [round(v, 4) for v in history.history["loss"]])
