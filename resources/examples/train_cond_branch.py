"""A tf.cond branch that stops being taken: its weights stop getting a gradient.

The auxiliary branch runs only while the batch's mean activation is above a threshold. As
training lowers the activations, the condition turns false for good; from that step on
`w_aux` is read by no op that runs, and tape.gradient returns None for it (run eagerly, the
branch not taken is not even built). Training carries on without a word, with `w_aux` frozen.

    tfviz check train_cond_branch.py --until none
"""

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = rng.normal(loc=1.0, size=(128, 4)).astype("float32")
y = np.zeros((128, 1), "float32")

w = tf.Variable(tf.ones([4, 1]) * 0.5, name="w")
w_aux = tf.Variable(tf.ones([1, 1]) * 0.1, name="w_aux")
opt = tf.keras.optimizers.SGD(learning_rate=0.05)

for step in range(1, 101):
    with tf.GradientTape() as tape:
        h = x @ w
        out = tf.cond(tf.reduce_mean(h) > 0.5, lambda: h + h @ w_aux, lambda: h)
        loss = tf.reduce_mean((out - y) ** 2)
    grads = tape.gradient(loss, [w, w_aux])
    opt.apply_gradients([(g, v) for g, v in zip(grads, [w, w_aux]) if g is not None])
    if step % 20 == 0:
        print(f"step {step}: loss {float(loss):.4f}")
