"""MAML on a linear model: the inner gradient is taken inside the outer tape, which
differentiates through it; the meta step is the outer tape's gradient call, computation 2."""

import tensorflow as tf

w = tf.Variable(tf.random.normal([3, 1]), name="w")
b = tf.Variable(tf.zeros([1]), name="b")
xs, ys = tf.random.normal([10, 3]), tf.random.normal([10, 1])
xq, yq = tf.random.normal([10, 3]), tf.random.normal([10, 1])
opt = tf.keras.optimizers.Adam(1e-3)


def forward(params, x):
    return x @ params[0] + params[1]


for _ in range(2):
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            support = tf.reduce_mean((forward([w, b], xs) - ys) ** 2)
        gw, gb = inner.gradient(support, [w, b])
        fast = [w - 0.1 * gw, b - 0.1 * gb]
        query = tf.reduce_mean((forward(fast, xq) - yq) ** 2)
    grads = outer.gradient(query, [w, b])
    opt.apply_gradients(zip(grads, [w, b]))
