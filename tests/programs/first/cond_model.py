"""A built model whose loss() takes a branch by the data: eagerly the branch not taken gives
its variable None, inside tf.function zeros. The eager call is still made, and says so."""

import keras
import tensorflow as tf
from probe_layer import ProbeDense

model = keras.Sequential([keras.Input((4,)), ProbeDense(1, name="head")])
other = tf.Variable(3.0, name="other")
x = tf.random.stateless_normal([16, 4], seed=[1, 2])


def loss():
    out = tf.reduce_mean(tf.square(model(x)))
    return tf.cond(out > -1.0, lambda: out, lambda: out * other)


if __name__ == "__main__":
    with tf.GradientTape() as tape:
        value = loss()
    variables = [*model.trainable_variables, other]
    for v, g in zip(variables, tape.gradient(value, variables)):
        print(getattr(v, "path", v.name.split(":")[0]), "connected" if g is not None else "disconnected")
