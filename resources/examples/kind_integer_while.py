"""An integer cast inside tf.while_loop: inside tf.function, TensorFlow returns
a tensor of zeros (not None) for a variable whose only path is cut there."""

import tensorflow as tf

rate = tf.Variable(0.7, name="rate")
bias = tf.Variable(0.1, name="bias")


def loss():
    def body(i, acc):
        steps = tf.cast(rate * 10.0, tf.int32)
        return i + 1, acc + tf.cast(steps, tf.float32)

    _, total = tf.while_loop(lambda i, acc: i < 3, body, [0, tf.constant(0.0)])
    return total + bias
