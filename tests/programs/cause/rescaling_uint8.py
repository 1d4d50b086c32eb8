"""An encoder whose input layer is Keras 3's Rescaling(1/255, dtype="uint8"), as in Keras' SimCLR
example: it casts the rescaled pixels to uint8, every one of them 0, so the encoder trains
nothing."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

keras.utils.set_random_seed(0)
images = np.random.randint(0, 256, size=(16, 8, 8, 3)).astype("uint8")

encoder = keras.Sequential(
    [
        keras.Input((8, 8, 3)),
        layers.Rescaling(1 / 255, dtype="uint8"),
        layers.RandomFlip("horizontal"),
        layers.Conv2D(4, 3, activation="relu"),
        layers.GlobalAveragePooling2D(),
        layers.Dense(8, activation="relu"),
    ],
    name="encoder",
)
head = keras.Sequential([keras.Input((8,)), layers.Dense(4)], name="head")
opt = keras.optimizers.Adam()

for _step in range(2):
    with tf.GradientTape() as tape:
        z = head(encoder(images, training=True))
        loss = tf.reduce_mean(tf.square(z - 1.0))
    variables = encoder.trainable_variables + head.trainable_variables
    grads = tape.gradient(loss, variables)
    opt.apply_gradients(zip(grads, variables))
