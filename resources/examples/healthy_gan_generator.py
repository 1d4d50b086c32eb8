"""A healthy GAN step: each network trains on its own turn.

`GAN` is a `keras.Model` container holding two separate models,
`self.generator` and `self.discriminator`, with one optimizer each. Its
`train_step` (run by `fit`) makes two optimizer updates per batch:

1. the discriminator step: a tape over the discriminator's predictions on
   real and generated points, differentiating
   `self.discriminator.trainable_variables` (update 1, 3, 5, ...);
2. the generator step: a tape over `discriminator(generator(noise))`,
   differentiating `self.generator.trainable_variables` (update 2, 4, 6,
   ...). Its loss reads the discriminator's weights, which this step must
   leave alone.

Data: points on a noisy circle. `--epochs` (default 2).
"""

import argparse

import keras
import numpy as np
import tensorflow as tf

LATENT_DIM = 4


def make_generator():
    return keras.Sequential(
        [
            keras.Input((LATENT_DIM,)),
            keras.layers.Dense(16, activation="tanh", name="g_hidden"),
            keras.layers.Dense(2, name="g_out"),
        ],
        name="generator",
    )


def make_discriminator():
    return keras.Sequential(
        [
            keras.Input((2,)),
            keras.layers.Dense(16, activation="tanh", name="d_hidden"),
            keras.layers.Dense(1, name="d_out"),
        ],
        name="discriminator",
    )


class GAN(keras.Model):
    def __init__(self, generator, discriminator, **kwargs):
        super().__init__(**kwargs)
        self.generator = generator
        self.discriminator = discriminator
        self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="g_loss")

    def compile(self, d_optimizer, g_optimizer, **kwargs):
        super().compile(**kwargs)
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.bce = keras.losses.BinaryCrossentropy(from_logits=True)

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def call(self, noise):
        return self.generator(noise)

    def train_step(self, real):
        batch_size = tf.shape(real)[0]

        # Discriminator step.
        fake = self.generator(tf.random.normal((batch_size, LATENT_DIM)))
        with tf.GradientTape() as tape:
            real_logits = self.discriminator(real, training=True)
            fake_logits = self.discriminator(fake, training=True)
            d_loss = self.bce(tf.ones_like(real_logits), real_logits) + self.bce(
                tf.zeros_like(fake_logits), fake_logits
            )
        d_grads = tape.gradient(d_loss, self.discriminator.trainable_variables)
        self.d_optimizer.apply_gradients(zip(d_grads, self.discriminator.trainable_variables))

        # Generator step.
        with tf.GradientTape() as tape:
            fake_logits = self.discriminator(self.generator(tf.random.normal((batch_size, LATENT_DIM))))
            g_loss = self.bce(tf.ones_like(fake_logits), fake_logits)
        g_grads = tape.gradient(g_loss, self.generator.trainable_variables)
        self.g_optimizer.apply_gradients(zip(g_grads, self.generator.trainable_variables))

        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {"d_loss": self.d_loss_tracker.result(), "g_loss": self.g_loss_tracker.result()}


def real_points(n=512, seed=0):
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, 2 * np.pi, n)
    points = np.stack([np.cos(angle), np.sin(angle)], axis=1) + 0.05 * rng.normal(size=(n, 2))
    return points.astype("float32")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    gan = GAN(make_generator(), make_discriminator(), name="gan")
    gan.compile(d_optimizer=keras.optimizers.Adam(1e-3), g_optimizer=keras.optimizers.Adam(1e-3))
    gan.fit(real_points(), batch_size=64, epochs=args.epochs, verbose=2)
