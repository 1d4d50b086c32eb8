"""Transfer learning as the Keras guide writes it: a base model frozen with
``base.trainable = False`` under a new head, trained by ``fit``."""

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
base = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(16)], name="base"
)
base.trainable = False
inputs = keras.Input((8,))
features = base(inputs, training=False)
outputs = keras.layers.Dense(1, name="head")(features)
model = keras.Model(inputs, outputs)
model.compile(optimizer="adam", loss="mse")
x = tf.random.normal([32, 8])
y = tf.random.normal([32, 1])
model.fit(x, y, batch_size=8, epochs=1, verbose=0)
