"""A bug report: a gradient penalty on the logits' gradient, where the labels are soft labels
a teacher produces. TensorFlow's softmax_cross_entropy_with_logits gives its labels a zero
second-order gradient, whatever the values, so the teacher gets exact zeros."""

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
teacher = keras.layers.Dense(5, name="teacher")
x = tf.random.normal([8, 3], seed=1)
logits = tf.random.normal([8, 5], seed=2)


def loss():
    labels = tf.nn.softmax(teacher(x))
    with tf.GradientTape() as inner:
        inner.watch(logits)
        ce = tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    g = inner.gradient(ce, logits)
    return tf.reduce_sum(g * g)
