"""A small healthy U-Net: every weight gets a gradient.

Two encoder levels of Conv2D + BatchNormalization + ReLU, a bottleneck, and two
decoder levels that upsample with Conv2DTranspose and concatenate the encoder's
skip connection, ending in a 1x1 convolution to mask logits. The data are
random 16x16 images with a thresholded mask.

BatchNormalization runs with `training=True`, so each one computes the batch
statistics with `tf.nn.moments`, whose variance holds an internal
`tf.stop_gradient` (five of them here, one per BatchNormalization). No weight needs a gradient through
those, so tfviz reports every variable connected and draws the BatchNorm
stop_gradients muted, not as bugs.
"""

import keras
import tensorflow as tf

SIZE, BATCH = 16, 4


def conv_block(x, filters, name):
    x = keras.layers.Conv2D(filters, 3, padding="same", use_bias=False, name=f"{name}_conv")(x)
    x = keras.layers.BatchNormalization(name=f"{name}_bn")(x)
    return keras.layers.ReLU(name=f"{name}_relu")(x)


def build_unet():
    inputs = keras.Input((SIZE, SIZE, 1), name="image")
    down1 = conv_block(inputs, 8, "down1")
    x = keras.layers.MaxPooling2D(name="pool1")(down1)
    down2 = conv_block(x, 16, "down2")
    x = keras.layers.MaxPooling2D(name="pool2")(down2)
    x = conv_block(x, 32, "bottleneck")
    x = keras.layers.Conv2DTranspose(16, 2, strides=2, name="up2_transpose")(x)
    x = keras.layers.Concatenate(name="skip2")([x, down2])
    x = conv_block(x, 16, "up2")
    x = keras.layers.Conv2DTranspose(8, 2, strides=2, name="up1_transpose")(x)
    x = keras.layers.Concatenate(name="skip1")([x, down1])
    x = conv_block(x, 8, "up1")
    outputs = keras.layers.Conv2D(1, 1, name="mask_logits")(x)
    return keras.Model(inputs, outputs, name="unet")


keras.utils.set_random_seed(0)  # the same weights on every run
model = build_unet()
images = tf.random.normal([BATCH, SIZE, SIZE, 1])
masks = tf.cast(images > 0.5, tf.float32)
bce = keras.losses.BinaryCrossentropy(from_logits=True)


def loss():
    return bce(masks, model(images, training=True))


if __name__ == "__main__":
    model.compile(optimizer="adam", loss=bce)
    model.fit(images, masks, epochs=2, verbose=2)
