"""A small healthy DCGAN, trained by its own two-tape step: both networks get gradients.

The generator maps noise through Dense + BatchNormalization + LeakyReLU to a
4x4 feature map and upsamples it with two Conv2DTranspose layers to a 16x16
image; the discriminator downsamples with two strided Conv2D + LeakyReLU and
scores with a Dense layer. The data are random 16x16 "blob" images.

This is a program, not a `loss()` function: run it as `python dcgan_healthy.py`
(or `tfviz check dcgan_healthy.py`). `train_step` records the forward pass
under two tapes and computes, in this order,

1. `gen_tape.gradient(gen_loss, generator.trainable_variables)` (`--step 1`):
   every generator weight is connected, BatchNorm's beta and gamma included;
2. `disc_tape.gradient(disc_loss, discriminator.trainable_variables)`
   (`--step 2`): every discriminator weight is connected.

The BatchNorm layers run in training mode, so the graph holds the internal
`tf.stop_gradient` of `tf.nn.moments`; no weight needs a gradient through it,
and tfviz draws it muted.
"""

import argparse

import keras
import numpy as np
import tensorflow as tf

LATENT_DIM, SIZE, BATCH = 8, 16, 16

generator = keras.Sequential(
    [
        keras.Input((LATENT_DIM,)),
        keras.layers.Dense(4 * 4 * 16, use_bias=False, name="g_project"),
        keras.layers.BatchNormalization(name="g_bn1"),
        keras.layers.LeakyReLU(0.2, name="g_act1"),
        keras.layers.Reshape((4, 4, 16), name="g_reshape"),
        keras.layers.Conv2DTranspose(8, 4, strides=2, padding="same", use_bias=False, name="g_up1"),
        keras.layers.BatchNormalization(name="g_bn2"),
        keras.layers.LeakyReLU(0.2, name="g_act2"),
        keras.layers.Conv2DTranspose(1, 4, strides=2, padding="same", activation="tanh", name="g_image"),
    ],
    name="generator",
)
discriminator = keras.Sequential(
    [
        keras.Input((SIZE, SIZE, 1)),
        keras.layers.Conv2D(8, 4, strides=2, padding="same", name="d_conv1"),
        keras.layers.LeakyReLU(0.2, name="d_act1"),
        keras.layers.Conv2D(16, 4, strides=2, padding="same", name="d_conv2"),
        keras.layers.LeakyReLU(0.2, name="d_act2"),
        keras.layers.Flatten(name="d_flatten"),
        keras.layers.Dense(1, name="d_score"),
    ],
    name="discriminator",
)

cross_entropy = keras.losses.BinaryCrossentropy(from_logits=True)
generator_optimizer = keras.optimizers.Adam(2e-4, beta_1=0.5)
discriminator_optimizer = keras.optimizers.Adam(2e-4, beta_1=0.5)


@tf.function
def train_step(real):
    noise = tf.random.normal([BATCH, LATENT_DIM])
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        fake = generator(noise, training=True)
        real_output = discriminator(real, training=True)
        fake_output = discriminator(fake, training=True)
        gen_loss = cross_entropy(tf.ones_like(fake_output), fake_output)
        disc_loss = (cross_entropy(tf.ones_like(real_output), real_output)
                     + cross_entropy(tf.zeros_like(fake_output), fake_output))

    gen_grads = gen_tape.gradient(gen_loss, generator.trainable_variables)
    disc_grads = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
    generator_optimizer.apply_gradients(zip(gen_grads, generator.trainable_variables))
    discriminator_optimizer.apply_gradients(zip(disc_grads, discriminator.trainable_variables))
    return gen_loss, disc_loss


def blob_images(n=64, seed=0):
    """Gaussian blobs at random places, scaled to [-1, 1] like the generator's tanh."""
    rng = np.random.default_rng(seed)
    grid = np.arange(SIZE)
    cy, cx = rng.uniform(4, SIZE - 4, (2, n, 1, 1))
    blobs = np.exp(-((grid[None, :, None] - cy) ** 2 + (grid[None, None, :] - cx) ** 2) / 8.0)
    return (2.0 * blobs - 1.0)[..., None].astype("float32")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Train a tiny DCGAN on blobs.")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    dataset = tf.data.Dataset.from_tensor_slices(blob_images()).shuffle(64, seed=0).batch(BATCH)
    for epoch in range(args.epochs):
        for real in dataset:
            gen_loss, disc_loss = train_step(real)
        print(f"epoch {epoch + 1}: generator {float(gen_loss):.3f}, discriminator {float(disc_loss):.3f}")
