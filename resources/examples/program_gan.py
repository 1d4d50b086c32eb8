"""A healthy two-tape GAN step: both networks get gradients.

One `@tf.function train_step(real)` records the forward pass under two tapes,
`gen_tape` and `disc_tape`, then computes the gradients in this order:

1. `gen_tape.gradient(gen_loss, generator.trainable_variables)`: the
   generator step (all four `generator/...` weights connected);
2. `disc_tape.gradient(disc_loss, discriminator.trainable_variables)`: the
   discriminator step (all four `discriminator/...` weights connected).

So the first gradient computation (`--step 1`) is the generator's and the
second (`--step 2`) the discriminator's. The data are points on a noisy
circle; `--epochs` (default 2) sets the length of the run.
"""

import argparse

import numpy as np
import tensorflow as tf

LATENT_DIM = 8
BATCH_SIZE = 64

generator = tf.keras.Sequential(
    [
        tf.keras.Input((LATENT_DIM,)),
        tf.keras.layers.Dense(16, activation="tanh", name="g_hidden"),
        tf.keras.layers.Dense(2, name="g_out"),
    ],
    name="generator",
)
discriminator = tf.keras.Sequential(
    [
        tf.keras.Input((2,)),
        tf.keras.layers.Dense(16, activation="tanh", name="d_hidden"),
        tf.keras.layers.Dense(1, name="d_out"),
    ],
    name="discriminator",
)

cross_entropy = tf.keras.losses.BinaryCrossentropy(from_logits=True)
generator_optimizer = tf.keras.optimizers.Adam(1e-3)
discriminator_optimizer = tf.keras.optimizers.Adam(1e-3)


def generator_loss(fake_output):
    return cross_entropy(tf.ones_like(fake_output), fake_output)


def discriminator_loss(real_output, fake_output):
    real_loss = cross_entropy(tf.ones_like(real_output), real_output)
    fake_loss = cross_entropy(tf.zeros_like(fake_output), fake_output)
    return real_loss + fake_loss


@tf.function
def train_step(real):
    noise = tf.random.normal([BATCH_SIZE, LATENT_DIM])
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        fake = generator(noise, training=True)
        real_output = discriminator(real, training=True)
        fake_output = discriminator(fake, training=True)
        gen_loss = generator_loss(fake_output)
        disc_loss = discriminator_loss(real_output, fake_output)

    gen_grads = gen_tape.gradient(gen_loss, generator.trainable_variables)
    disc_grads = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
    generator_optimizer.apply_gradients(zip(gen_grads, generator.trainable_variables))
    discriminator_optimizer.apply_gradients(zip(disc_grads, discriminator.trainable_variables))
    return gen_loss, disc_loss


def real_samples(n=512, seed=0):
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, 2 * np.pi, n)
    points = np.stack([np.cos(angle), np.sin(angle)], axis=1) + 0.05 * rng.normal(size=(n, 2))
    return points.astype("float32")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Train a tiny GAN on a circle.")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    dataset = tf.data.Dataset.from_tensor_slices(real_samples()).shuffle(512, seed=0).batch(BATCH_SIZE)
    for epoch in range(args.epochs):
        for real in dataset:
            gen_loss, disc_loss = train_step(real)
        print(f"epoch {epoch + 1}: generator {float(gen_loss):.3f}, discriminator {float(disc_loss):.3f}")
