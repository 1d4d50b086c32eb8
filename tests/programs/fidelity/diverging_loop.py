"""A custom loop whose learning rate is too high: the loss overflows float32 at step 5 while
TensorFlow's gradients there are still finite (up to 1e36), and at step 6 the weights those
gradients made overflow the forward pass. The tape block assigns ``loss``, which the previous
step left infinite: no input of the next step."""

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(1)
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 20)).astype("float32")
y = (x @ rng.normal(size=(20, 1))).astype("float32")
model = tf.keras.Sequential(
    [tf.keras.Input((20,)), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(1)]
)
opt = tf.keras.optimizers.SGD(learning_rate=0.5)
for step in range(8):
    xb, yb = x[step * 32 : (step + 1) * 32], y[step * 32 : (step + 1) * 32]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(xb) - yb) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
