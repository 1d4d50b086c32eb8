"""A pix2pix-style generator trained at batch size 1, as the TensorFlow tutorial trains it:
the innermost BatchNormalization sees a 1x1 map, one value per channel, and outputs exact
zeros, so the blocks around it never train."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

keras.utils.set_random_seed(0)


def downsample(filters, batchnorm=True):
    block = keras.Sequential()
    block.add(layers.Conv2D(filters, 4, strides=2, padding="same", use_bias=False))
    if batchnorm:
        block.add(layers.BatchNormalization())
    block.add(layers.LeakyReLU())
    return block


def upsample(filters):
    block = keras.Sequential()
    block.add(layers.Conv2DTranspose(filters, 4, strides=2, padding="same", use_bias=False))
    block.add(layers.BatchNormalization())
    block.add(layers.ReLU())
    return block


inputs = keras.Input((8, 8, 3))
d1 = downsample(8, batchnorm=False)(inputs)  # 4x4
d2 = downsample(16)(d1)  # 2x2
d3 = downsample(16)(d2)  # 1x1: one value per channel at batch size 1
u1 = upsample(16)(d3)  # 2x2
u1 = layers.Concatenate()([u1, d2])
u2 = upsample(8)(u1)
out = layers.Conv2DTranspose(3, 4, strides=2, padding="same", activation="tanh")(u2)
generator = keras.Model(inputs, out)
opt = keras.optimizers.Adam(2e-4)
x = np.random.rand(1, 8, 8, 3).astype("float32")
y = np.random.rand(1, 8, 8, 3).astype("float32")

for _ in range(2):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.abs(y - generator(x, training=True)))
    grads = tape.gradient(loss, generator.trainable_variables)
    opt.apply_gradients(zip(grads, generator.trainable_variables))
