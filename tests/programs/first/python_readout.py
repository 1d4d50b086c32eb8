"""loss() leaves TensorFlow: it hands back float(...) of the loss. Eagerly that is a Python
float, of which tape.gradient can make nothing; only AutoGraph, in a tf.function, would
have turned it into a cast and let the gradient through."""

import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")


def loss():
    return float(tf.reduce_sum(w * w))


if __name__ == "__main__":  # the oracle: tape.gradient as the user's eager call has it
    with tf.GradientTape() as tape:
        value = loss()
    try:
        print("w", "connected" if tape.gradient(value, w) is not None else "disconnected")
    except Exception as exc:  # noqa: BLE001 - TensorFlow's answer, whatever it is
        print("w", type(exc).__name__)
