"""A bug report: a loop RNN whose gate casts to an integer, as a loss(); the loop over
tf.range runs as Python eagerly and as a tf.while_loop in a graph."""

import tensorflow as tf

tf.random.set_seed(0)
T, B, D, H = 5, 4, 3, 6
xs = tf.random.normal([T, B, D])
W_x = tf.Variable(tf.random.normal([D, H]) * 0.3, name="W_x")
W_h = tf.Variable(tf.random.normal([H, H]) * 0.3, name="W_h")
W_gate = tf.Variable(tf.random.normal([H, 1]) * 0.3, name="W_gate")


def loss():
    h = tf.zeros([B, H])
    for t in tf.range(T):
        gate = tf.cast(tf.cast(h @ W_gate > 0.0, tf.int32), tf.float32)
        h = tf.tanh(xs[t] @ W_x + gate * (h @ W_h))
    return tf.reduce_sum(h**2)
