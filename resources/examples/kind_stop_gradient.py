"""tf.stop_gradient on the only path from a variable."""

import tensorflow as tf

teacher = tf.Variable(tf.ones([4]), name="teacher")
student = tf.Variable(tf.zeros([4]), name="student")


def loss():
    return tf.reduce_sum(tf.square(student - tf.stop_gradient(teacher * 2.0)))
