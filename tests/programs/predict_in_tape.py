"""model.predict() inside a GradientTape: it returns NumPy, so the loss has no gradient.

With --teacher the step is healthy: only the teacher's targets come from predict(), and the
student is called as a model should be."""

import sys

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
student = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                           keras.layers.Dense(2)])
teacher = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
opt = keras.optimizers.Adam(1e-3)
x = np.random.default_rng(0).random((32, 4)).astype("float32")
y = np.random.default_rng(1).random((32, 2)).astype("float32")
for _ in range(2):
    with tf.GradientTape() as tape:
        if "--teacher" in sys.argv:
            target = teacher.predict(x, verbose=0)
            pred = student(x, training=True)
        else:
            target = y
            pred = student.predict(x, verbose=0)
        loss = tf.reduce_mean(tf.square(pred - target))
    grads = tape.gradient(loss, student.trainable_variables)
    opt.apply_gradients([(g, v) for g, v in zip(grads, student.trainable_variables) if g is not None])
