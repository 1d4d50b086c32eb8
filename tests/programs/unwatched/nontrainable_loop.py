"""A custom loop that asks for the gradient of a variable made with trainable=False: a tape
watches only trainable variables on its own, so TensorFlow gives it None."""

import tensorflow as tf

x = tf.random.normal([16, 4])
y = tf.random.normal([16, 1])
w = tf.Variable(tf.random.normal([4, 1]), trainable=False)
b = tf.Variable(0.0)
opt = tf.keras.optimizers.SGD(0.1)
for _ in range(3):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((x @ w + b - y) ** 2)
    grads = tape.gradient(loss, [w, b])
    opt.apply_gradients(zip(grads, [w, b]))
