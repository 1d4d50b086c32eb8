"""An autoencoder trained with a variable list that forgets the decoder.

`Autoencoder` is one `keras.Model` with four Dense layers: `enc_hidden` and
`enc_code` (the encoder), `dec_hidden` and `dec_out` (the decoder). The eager
custom loop builds the list of variables to train by hand from the encoder
layers only, and passes that list both to `tape.gradient` and to
`optimizer.apply_gradients`. The reconstruction loss reads the decoder's
weights (TensorFlow would give them a gradient if asked), but the decoder is
never updated: it stays at its random initialisation while the encoder tries
to compensate.

Data: 12-dimensional points on a noisy 3-dimensional subspace. `--steps`
(default 40).
"""

import argparse

import keras
import numpy as np
import tensorflow as tf


class Autoencoder(keras.Model):
    def __init__(self, data_dim=12, code_dim=3, **kwargs):
        super().__init__(**kwargs)
        self.enc_hidden = keras.layers.Dense(24, activation="relu", name="enc_hidden")
        self.enc_code = keras.layers.Dense(code_dim, name="enc_code")
        self.dec_hidden = keras.layers.Dense(24, activation="relu", name="dec_hidden")
        self.dec_out = keras.layers.Dense(data_dim, name="dec_out")

    def call(self, x):
        code = self.enc_code(self.enc_hidden(x))
        return self.dec_out(self.dec_hidden(code))


def make_data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    basis = rng.normal(size=(3, 12))
    return (rng.normal(size=(n, 3)) @ basis + 0.05 * rng.normal(size=(n, 12))).astype("float32")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    data = make_data()
    model = Autoencoder(name="autoencoder")
    model(data[:1])  # build the layers
    optimizer = keras.optimizers.Adam(learning_rate=1e-2)
    train_vars = model.enc_hidden.trainable_variables + model.enc_code.trainable_variables

    for step in range(args.steps):
        batch = data[(step * 32) % len(data) :][:32]
        with tf.GradientTape() as tape:
            reconstruction = model(batch, training=True)
            loss = tf.reduce_mean((batch - reconstruction) ** 2)
        grads = tape.gradient(loss, train_vars)
        optimizer.apply_gradients(zip(grads, train_vars))
        if (step + 1) % 10 == 0:
            print(f"step {step + 1}: reconstruction loss {float(loss):.4f}")
