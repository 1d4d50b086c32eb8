"""An RNN whose gradients are exactly zero inside tf.while_loop.

``W_aux`` is read only in a tf.cond branch that never runs (``t > 100``), and every
step's gate is 0, so ``W_h`` gets zeros too. Inside a loop body no gradient is
measured, so tfviz names the branch as the likely cause and says when it cannot tell.
"""

import tensorflow as tf

W_h = tf.Variable(tf.fill([4, 4], 0.3), name="W_h")
W_gate = tf.Variable(tf.fill([4, 1], -1.0), name="W_gate")
W_aux = tf.Variable(tf.eye(4), name="W_aux")
xs = tf.reshape(tf.range(48, dtype=tf.float32) / 48.0, [6, 2, 4])


def loss():
    def body(t, h):
        gate = tf.cast(tf.sigmoid(h @ W_gate) > 0.5, tf.float32)  # 0 at every step here
        h_new = tf.tanh(xs[t] @ W_h + h) * gate
        h_new = tf.cond(t > 100, lambda: h_new @ W_aux, lambda: h_new)
        return t + 1, h_new

    _, h = tf.while_loop(lambda t, h: t < 6, body, [0, tf.ones([2, 4])])
    return tf.reduce_sum(h)
