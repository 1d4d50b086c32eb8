"""A model built where it is defined (keras.Input): its loss() needs no first call to build it.
``shift`` reaches the loss only through an integer cast."""

import keras
import tensorflow as tf
from probe_layer import ProbeDense

model = keras.Sequential([keras.Input((4,)), ProbeDense(8, activation="relu", name="body"),
                          ProbeDense(1, name="head")])
x = tf.random.stateless_normal([16, 4], seed=[1, 2])
y = tf.random.stateless_normal([16, 1], seed=[3, 4])
shift = tf.Variable(0.5, name="shift")


def loss():
    pred = model(x)
    scale = tf.cast(tf.cast(shift * 100.0, tf.int32), tf.float32)
    return tf.reduce_mean(tf.square(pred * scale - y))


if __name__ == "__main__":  # the oracle: tape.gradient as the user's eager call has it
    with tf.GradientTape() as tape:
        value = loss()
    variables = [*model.trainable_variables, shift]
    for v, g in zip(variables, tape.gradient(value, variables)):
        print(getattr(v, "path", v.name.split(":")[0]), "connected" if g is not None else "disconnected")
