import keras
import numpy as np
import tensorflow as tf

x = np.random.default_rng(0).random((64, 8)).astype("float32")
y = np.random.default_rng(1).random((64, 1)).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)

model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(ds, epochs=1, verbose=0)
print("trained")
