"""The same, in a tf.function step, as a graph runs it."""

import tensorflow as tf

x = tf.random.normal([16, 4])
y = tf.random.normal([16, 1])
w = tf.Variable(tf.random.normal([4, 1]), trainable=False, name="w")
b = tf.Variable(0.0, name="b")


@tf.function
def train_step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ w + b - y) ** 2)
    gw, gb = tape.gradient(loss, [w, b])
    b.assign_sub(0.1 * gb)
    if gw is not None:
        w.assign_sub(0.1 * gw)
    return loss


for _ in range(3):
    train_step()
