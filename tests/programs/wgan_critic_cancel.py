"""A WGAN-GP critic step written as the Keras example writes it.

Step 1 is the gradient penalty's inner ``gp_tape.gradient(pred, [interpolated])``,
a tensor the step makes itself; the generator runs before any tape opens.
Step 2 is the critic's own gradient: its output bias gets exactly zero,
because it shifts ``mean(critic(fake))`` and ``mean(critic(real))`` alike and
the two cancel in their difference.
"""

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)  # the weights too: the same numbers in every run
layers = tf.keras.layers
gen = tf.keras.Sequential([tf.keras.Input((4,)), layers.Dense(8, activation="relu"), layers.Dense(6)],
                          name="generator")
critic = tf.keras.Sequential([tf.keras.Input((6,)), layers.Dense(8, activation="relu"), layers.Dense(1)],
                             name="critic")
c_opt = tf.keras.optimizers.Adam(1e-3)
real = np.random.default_rng(0).normal(size=(16, 6)).astype("float32")


def gradient_penalty(real, fake):
    alpha = tf.random.uniform([real.shape[0], 1])
    interpolated = real + alpha * (fake - real)
    with tf.GradientTape() as gp_tape:
        gp_tape.watch(interpolated)
        pred = critic(interpolated, training=True)
    grads = gp_tape.gradient(pred, [interpolated])[0]
    norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=1))
    return tf.reduce_mean((norm - 1.0) ** 2)


@tf.function
def critic_step(real):
    z = tf.random.normal([16, 4])
    fake = gen(z, training=True)
    with tf.GradientTape() as tape:
        wasserstein = tf.reduce_mean(critic(fake)) - tf.reduce_mean(critic(real))
        d_loss = wasserstein + 10.0 * gradient_penalty(real, fake)
    grads = tape.gradient(d_loss, critic.trainable_variables)
    c_opt.apply_gradients(zip(grads, critic.trainable_variables))
    return d_loss


for _ in range(3):
    critic_step(real)
