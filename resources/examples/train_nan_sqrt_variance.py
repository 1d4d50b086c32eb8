"""A batch normalisation written by hand, without its epsilon: NaN once a ReLU unit dies.

`(h - mean) / sqrt(variance)` is fine while every hidden unit varies over the batch. A
learning rate on the high side kills a ReLU unit after a few dozen steps: it outputs 0 for
the whole batch, its variance is exactly 0, `sqrt(0)` is 0, and its gradient (and the
division) is not finite. keras.layers.BatchNormalization adds `epsilon` under the root.

    tfviz check train_nan_sqrt_variance.py --until nan
"""

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.uniform(size=(256, 8)).astype("float32")
y = (x.sum(axis=1, keepdims=True) - 8.0).astype("float32")

hidden = keras.layers.Dense(16, activation="relu", name="hidden",
                            bias_initializer=keras.initializers.Constant(1.0))  # every unit alive at first
out = keras.layers.Dense(1, name="out", kernel_initializer=keras.initializers.Constant(0.5))
opt = keras.optimizers.SGD(learning_rate=0.5)


def normalize(h):
    mean, variance = tf.nn.moments(h, axes=[0])
    return (h - mean) / tf.sqrt(variance)  # no epsilon


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((out(normalize(hidden(xb))) - yb) ** 2)
    variables = hidden.trainable_variables + out.trainable_variables
    grads = tape.gradient(loss, variables)
    opt.apply_gradients(zip(grads, variables))
    return loss


for step in range(1, 301):
    loss = train_step(x, y)
    if step % 50 == 0:
        print(f"step {step}: loss {float(loss):.4f}")
