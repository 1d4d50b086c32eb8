"""ReLUs that die one by one as training goes on, until none is left.

The inputs are all positive and the output layer starts with positive weights, so every
gradient step pushes the hidden units' pre-activations down. A learning rate too high for
that overshoots: unit after unit ends up negative for every input, and a ReLU that is off for
every input gets no gradient again. Once the last one dies, the hidden layer's kernel and
bias get a gradient of exactly zero, and the loss stops falling.

    tfviz check train_dead_relu.py --until zero
"""

import keras
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = rng.uniform(size=(256, 8)).astype("float32")
y = (x.sum(axis=1, keepdims=True) - 8.0).astype("float32")

keras.utils.set_random_seed(0)
hidden = tf.keras.layers.Dense(16, activation="relu", name="hidden")
out = tf.keras.layers.Dense(1, name="out", kernel_initializer=tf.keras.initializers.Constant(0.5))
opt = tf.keras.optimizers.SGD(learning_rate=0.12)

for step in range(1, 301):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((out(hidden(x)) - y) ** 2)
    variables = hidden.trainable_variables + out.trainable_variables
    grads = tape.gradient(loss, variables)
    opt.apply_gradients(zip(grads, variables))
    if step % 50 == 0:
        print(f"step {step}: loss {float(loss):.4f}")
