"""Logistic regression whose hand-written cross-entropy turns NaN once the model is sure.

``y * log(p) + (1 - y) * log(1 - p)``: once ``p`` rounds to exactly 1.0 for a positive
example, ``log(1 - p)`` is ``-inf`` and ``(1 - y) * -inf`` is ``0 * -inf``, which is NaN; the
loss and every gradient turn NaN at a step the seed fixes. keras.losses.BinaryCrossentropy
clips ``p`` (or take logits: from_logits=True).

    tfviz check train_nan_log.py --until nan
"""

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = rng.normal(size=(256, 4)).astype("float32") * 4.0  # not standardised
y = (x[:, :1] > 0).astype("float32")  # separable: the model keeps growing its weights

w = tf.Variable(tf.zeros([4, 1]), name="w")
b = tf.Variable(tf.zeros([1]), name="b")
opt = tf.keras.optimizers.SGD(learning_rate=1.0)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        p = tf.sigmoid(xb @ w + b)
        loss = -tf.reduce_mean(yb * tf.math.log(p) + (1 - yb) * tf.math.log(1 - p))
    grads = tape.gradient(loss, [w, b])
    opt.apply_gradients(zip(grads, [w, b]))
    return loss


for step in range(1, 501):
    loss = train_step(x, y)
    if step % 50 == 0:
        print(f"step {step}: loss {float(loss):.4f}")
