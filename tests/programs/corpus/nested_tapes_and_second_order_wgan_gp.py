"""A WGAN-GP on synthetic 16x16 images: a conv critic trained with a gradient penalty from an inner tape, then the generator.

Pattern: Keras example "WGAN-GP" (gradient_penalty with an inner gp_tape watching `interpolated`, critic step with the generator run before the tape, then generator step), run eagerly
Family: nested tapes and second order
Bug: the gradient penalty and `d_loss = d_cost + gp * GP_WEIGHT` are dedented out of the critic's `with tf.GradientTape()` block, so `d_loss` is not recorded and every critic variable gets a None gradient (Keras then raises "No gradients provided")
Step: 2
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--steps", type=int, default=3)
args = parser.parse_args()

LATENT, BATCH, GP_WEIGHT = 16, 16, 10.0
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
real_images = np.tanh(rng.normal(size=(64, 16, 16, 1))).astype("float32")

layers = tf.keras.layers
generator = tf.keras.Sequential([
    tf.keras.Input((LATENT,)),
    layers.Dense(4 * 4 * 32), layers.LeakyReLU(0.2), layers.Reshape((4, 4, 32)),
    layers.UpSampling2D(), layers.Conv2D(16, 3, padding="same"), layers.LeakyReLU(0.2),
    layers.UpSampling2D(), layers.Conv2D(1, 3, padding="same", activation="tanh"),
], name="generator")
critic = tf.keras.Sequential([
    tf.keras.Input((16, 16, 1)),
    layers.Conv2D(16, 4, strides=2, padding="same"), layers.LeakyReLU(0.2),
    layers.Conv2D(32, 4, strides=2, padding="same"), layers.LeakyReLU(0.2),
    layers.Flatten(), layers.Dropout(0.2), layers.Dense(1, use_bias=False),
], name="critic")
d_optimizer = tf.keras.optimizers.Adam(1e-4, beta_1=0.5, beta_2=0.9)
g_optimizer = tf.keras.optimizers.Adam(1e-4, beta_1=0.5, beta_2=0.9)


def gradient_penalty(real, fake):
    alpha = tf.random.uniform([tf.shape(real)[0], 1, 1, 1], 0.0, 1.0)
    interpolated = real + alpha * (fake - real)
    with tf.GradientTape() as gp_tape:
        gp_tape.watch(interpolated)
        pred = critic(interpolated, training=True)
    grads = gp_tape.gradient(pred, [interpolated])[0]
    norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=[1, 2, 3]))
    return tf.reduce_mean((norm - 1.0) ** 2)


def critic_step(real):
    z = tf.random.normal([BATCH, LATENT])
    fake = generator(z, training=True)
    with tf.GradientTape() as tape:
        fake_logits = critic(fake, training=True)
        real_logits = critic(real, training=True)
        d_cost = tf.reduce_mean(fake_logits) - tf.reduce_mean(real_logits)
        if not args.bug:
            gp = gradient_penalty(real, fake)
            d_loss = d_cost + gp * GP_WEIGHT
    if args.bug:
        gp = gradient_penalty(real, fake)
        d_loss = d_cost + gp * GP_WEIGHT
    d_gradient = tape.gradient(d_loss, critic.trainable_variables)
    d_optimizer.apply_gradients(zip(d_gradient, critic.trainable_variables))
    return d_loss


def generator_step():
    z = tf.random.normal([BATCH, LATENT])
    with tf.GradientTape() as tape:
        generated = generator(z, training=True)
        g_loss = -tf.reduce_mean(critic(generated, training=True))
    g_gradient = tape.gradient(g_loss, generator.trainable_variables)
    g_optimizer.apply_gradients(zip(g_gradient, generator.trainable_variables))
    return g_loss


for step in range(args.steps):
    batch = real_images[rng.integers(0, len(real_images), BATCH)]
    d_loss = critic_step(tf.constant(batch))
    g_loss = generator_step()
    print(f"step {step}: d_loss {float(d_loss):.4f} g_loss {float(g_loss):.4f}")
