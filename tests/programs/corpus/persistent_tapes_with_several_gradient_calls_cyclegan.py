"""CycleGAN on unpaired synthetic 32x32 images: two generators and two discriminators updated from one persistent tape with four gradient calls and four Adam optimizers.

Pattern: TensorFlow tutorial "CycleGAN" (pix2pix-style generators/discriminators with a custom InstanceNormalization layer, tf.GradientTape(persistent=True), cycle + identity + LSGAN losses, four tape.gradient calls in a @tf.function train_step)
Family: persistent tapes with several gradient calls
Bug: the custom InstanceNormalization layer returns the normalised tensor without applying its learned `scale` and `offset`, so every instance-norm scale/offset variable of all four networks gets a None gradient (Keras warns and skips them)
Step: 1
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()

LAMBDA = 10
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
train_horses = np.tanh(rng.normal(size=(4, 32, 32, 3))).astype("float32")
train_zebras = np.tanh(rng.normal(0.5, 1.0, size=(4, 32, 32, 3))).astype("float32")
layers = tf.keras.layers


class InstanceNormalization(layers.Layer):
    def __init__(self, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.epsilon = epsilon

    def build(self, input_shape):
        self.scale = self.add_weight(name="scale", shape=input_shape[-1:], initializer="ones")
        self.offset = self.add_weight(name="offset", shape=input_shape[-1:], initializer="zeros")

    def call(self, x):
        mean, variance = tf.nn.moments(x, axes=[1, 2], keepdims=True)
        normalized = (x - mean) * tf.math.rsqrt(variance + self.epsilon)
        if args.bug:
            return normalized
        return self.scale * normalized + self.offset


def unet_generator(name):
    inputs = tf.keras.Input((32, 32, 3))
    d1 = layers.LeakyReLU()(layers.Conv2D(16, 4, strides=2, padding="same")(inputs))
    d2 = layers.Conv2D(32, 4, strides=2, padding="same", use_bias=False)(d1)
    d2 = layers.LeakyReLU()(InstanceNormalization()(d2))
    u1 = layers.Conv2DTranspose(16, 4, strides=2, padding="same", use_bias=False)(d2)
    u1 = layers.ReLU()(InstanceNormalization()(u1))
    u1 = layers.Concatenate()([u1, d1])
    outputs = layers.Conv2DTranspose(3, 4, strides=2, padding="same", activation="tanh")(u1)
    return tf.keras.Model(inputs, outputs, name=name)


def discriminator(name):
    inputs = tf.keras.Input((32, 32, 3))
    x = layers.LeakyReLU()(layers.Conv2D(16, 4, strides=2, padding="same")(inputs))
    x = layers.Conv2D(32, 4, strides=2, padding="same", use_bias=False)(x)
    x = layers.LeakyReLU()(InstanceNormalization()(x))
    outputs = layers.Conv2D(1, 4, padding="same")(x)
    return tf.keras.Model(inputs, outputs, name=name)


generator_g, generator_f = unet_generator("generator_g"), unet_generator("generator_f")
discriminator_x, discriminator_y = discriminator("discriminator_x"), discriminator("discriminator_y")
generator_g_optimizer = tf.keras.optimizers.Adam(2e-4, beta_1=0.5)
generator_f_optimizer = tf.keras.optimizers.Adam(2e-4, beta_1=0.5)
discriminator_x_optimizer = tf.keras.optimizers.Adam(2e-4, beta_1=0.5)
discriminator_y_optimizer = tf.keras.optimizers.Adam(2e-4, beta_1=0.5)
for opt, net in [(generator_g_optimizer, generator_g), (generator_f_optimizer, generator_f),
                 (discriminator_x_optimizer, discriminator_x), (discriminator_y_optimizer, discriminator_y)]:
    opt.build(net.trainable_variables)
loss_obj = tf.keras.losses.BinaryCrossentropy(from_logits=True)


def discriminator_loss(real, generated):
    return (loss_obj(tf.ones_like(real), real) + loss_obj(tf.zeros_like(generated), generated)) * 0.5


def generator_loss(generated):
    return loss_obj(tf.ones_like(generated), generated)


def calc_cycle_loss(real_image, cycled_image):
    return LAMBDA * tf.reduce_mean(tf.abs(real_image - cycled_image))


def identity_loss(real_image, same_image):
    return LAMBDA * 0.5 * tf.reduce_mean(tf.abs(real_image - same_image))


@tf.function
def train_step(real_x, real_y):
    with tf.GradientTape(persistent=True) as tape:
        fake_y = generator_g(real_x, training=True)
        cycled_x = generator_f(fake_y, training=True)
        fake_x = generator_f(real_y, training=True)
        cycled_y = generator_g(fake_x, training=True)
        same_x = generator_f(real_x, training=True)
        same_y = generator_g(real_y, training=True)
        disc_real_x = discriminator_x(real_x, training=True)
        disc_real_y = discriminator_y(real_y, training=True)
        disc_fake_x = discriminator_x(fake_x, training=True)
        disc_fake_y = discriminator_y(fake_y, training=True)
        gen_g_loss = generator_loss(disc_fake_y)
        gen_f_loss = generator_loss(disc_fake_x)
        total_cycle_loss = calc_cycle_loss(real_x, cycled_x) + calc_cycle_loss(real_y, cycled_y)
        total_gen_g_loss = gen_g_loss + total_cycle_loss + identity_loss(real_y, same_y)
        total_gen_f_loss = gen_f_loss + total_cycle_loss + identity_loss(real_x, same_x)
        disc_x_loss = discriminator_loss(disc_real_x, disc_fake_x)
        disc_y_loss = discriminator_loss(disc_real_y, disc_fake_y)
    generator_g_gradients = tape.gradient(total_gen_g_loss, generator_g.trainable_variables)
    generator_f_gradients = tape.gradient(total_gen_f_loss, generator_f.trainable_variables)
    discriminator_x_gradients = tape.gradient(disc_x_loss, discriminator_x.trainable_variables)
    discriminator_y_gradients = tape.gradient(disc_y_loss, discriminator_y.trainable_variables)
    generator_g_optimizer.apply_gradients(zip(generator_g_gradients, generator_g.trainable_variables))
    generator_f_optimizer.apply_gradients(zip(generator_f_gradients, generator_f.trainable_variables))
    discriminator_x_optimizer.apply_gradients(
        zip(discriminator_x_gradients, discriminator_x.trainable_variables))
    discriminator_y_optimizer.apply_gradients(
        zip(discriminator_y_gradients, discriminator_y.trainable_variables))
    return total_gen_g_loss, disc_x_loss


dataset = tf.data.Dataset.zip((
    tf.data.Dataset.from_tensor_slices(train_horses).batch(2),
    tf.data.Dataset.from_tensor_slices(train_zebras).batch(2),
))
for epoch in range(args.epochs):
    for image_x, image_y in dataset:
        gen_loss, disc_loss = train_step(image_x, image_y)
    print(f"epoch {epoch}: gen_g loss {float(gen_loss):.4f}, disc_x loss {float(disc_loss):.4f}")
