"""loss() reads a variable that only its closure holds: the script has no name for it."""

import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")


def make():
    hidden = tf.Variable(3.0, name="hidden")

    def loss():
        return tf.reduce_sum(w * hidden)

    return loss


loss = make()
