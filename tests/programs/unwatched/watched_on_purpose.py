"""A variable made with trainable=False that the step watches itself: it gets a gradient."""

import tensorflow as tf

x = tf.random.normal([16, 4])
y = tf.random.normal([16, 1])
w = tf.Variable(tf.random.normal([4, 1]), trainable=False)
b = tf.Variable(0.0)
for _ in range(3):
    with tf.GradientTape() as tape:
        tape.watch(w)
        loss = tf.reduce_mean((x @ w + b - y) ** 2)
    gw, gb = tape.gradient(loss, [w, b])
    w.assign_sub(0.1 * gw)
    b.assign_sub(0.1 * gb)
