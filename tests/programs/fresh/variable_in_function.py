"""A tf.function training step that makes its weight inside: TensorFlow refuses the second
trace ("only supports singleton tf.Variables"), and eagerly the weight would be new each step."""

import tensorflow as tf

x = tf.random.normal([16, 4])
y = tf.random.normal([16, 1])


@tf.function
def train_step():
    w = tf.Variable(tf.random.normal([4, 1]))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ w - y) ** 2)
    g = tape.gradient(loss, w)
    w.assign_sub(0.1 * g)
    return loss


for _ in range(3):
    train_step()
