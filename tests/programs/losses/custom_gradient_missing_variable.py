"""A bug report: a custom gradient whose grad_fn returns no gradient for the variable it reads."""

import tensorflow as tf

act_scale = tf.Variable(1.5, name="act_scale")
w = tf.Variable(tf.ones([4, 3]), name="w")
x = tf.random.normal([8, 4], seed=2)


@tf.custom_gradient
def scaled_relu(h):
    y = tf.nn.relu(h) * act_scale

    def grad_fn(dy, variables=None):
        return dy * tf.cast(h > 0, tf.float32) * act_scale, []

    return y, grad_fn


def loss():
    return tf.reduce_sum(scaled_relu(x @ w))
