"""A recurrent step written as a loop over tf.range, whose gate casts to an integer: W_gate
never trains. In the tf.function step TensorFlow hands back zeros for it (a tf.while_loop);
run eagerly (--eager) it gives None."""

import sys

import tensorflow as tf

tf.keras.utils.set_random_seed(0)
T, B, D, H = 5, 4, 3, 6
xs = tf.random.normal([T, B, D])
y = tf.random.normal([B, H])
W_x = tf.Variable(tf.random.normal([D, H]) * 0.3, name="W_x")
W_h = tf.Variable(tf.random.normal([H, H]) * 0.3, name="W_h")
W_gate = tf.Variable(tf.random.normal([H, 1]) * 0.3, name="W_gate")
opt = tf.keras.optimizers.SGD(0.1)


@tf.function
def train_step():
    with tf.GradientTape() as tape:
        h = tf.zeros([B, H])
        for t in tf.range(T):
            gate = tf.cast(tf.cast(h @ W_gate > 0.0, tf.int32), tf.float32)
            h = tf.tanh(xs[t] @ W_x + gate * (h @ W_h))
        loss = tf.reduce_mean((h - y) ** 2)
    grads = tape.gradient(loss, [W_x, W_h, W_gate])
    opt.apply_gradients(zip(grads, [W_x, W_h, W_gate]))
    return loss


def eager_step():
    with tf.GradientTape() as tape:
        h = tf.zeros([B, H])
        for t in tf.range(T):
            gate = tf.cast(tf.cast(h @ W_gate > 0.0, tf.int32), tf.float32)
            h = tf.tanh(xs[t] @ W_x + gate * (h @ W_h))
        loss = tf.reduce_mean((h - y) ** 2)
    grads = tape.gradient(loss, [W_x, W_h, W_gate])
    opt.apply_gradients([(g, v) for g, v in zip(grads, [W_x, W_h, W_gate]) if g is not None])
    return loss


for _ in range(3):
    (eager_step if "--eager" in sys.argv else train_step)()
