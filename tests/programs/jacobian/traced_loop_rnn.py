"""A custom step in a tf.function whose AutoGraph loop TensorFlow differentiates under the
tape: it rewrites the tf.while_loop to keep its intermediates and wraps it in a call op
(while/StatefulPartitionedCall). h is assigned inside the loop; the Jacobian of what the
loop hands out is asked for through that call op."""

import numpy as np
import tensorflow as tf

T, B, D = 6, 8, 5
rng = np.random.default_rng(0)
xs = tf.constant(rng.normal(size=(T, B, D)).astype("float32"))
W = tf.Variable(rng.normal(size=(D, D)).astype("float32") * 0.3, name="W")
U = tf.Variable(rng.normal(size=(D, D)).astype("float32") * 0.3, name="U")
V = tf.Variable(rng.normal(size=(D, 1)).astype("float32"), name="V")
opt = tf.keras.optimizers.SGD(0.01)


def forward():
    h = tf.zeros([B, D])
    for t in tf.range(T):
        h = tf.tanh(tf.matmul(xs[t], W) + tf.stop_gradient(tf.matmul(h, U)))
    return h


@tf.function
def step():
    with tf.GradientTape() as tape:
        h = forward()
        loss = tf.reduce_mean(tf.matmul(h, V) ** 2)
    g = tape.gradient(loss, [W, U, V])
    opt.apply_gradients(zip(g, [W, U, V]))
    return loss


if __name__ == "__main__":
    step()
