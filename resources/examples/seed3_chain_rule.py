"""Seed 3: splitting a gradient into chain-rule parts.

tf.gradients (and tape.gradient) sum over the target's elements, so
d loss/d out times d out/d x does not rebuild d loss/d x; the per-element
Jacobian does. The gradient itself flows fine: `tfviz check` reports ok.
"""

import tensorflow as tf

x = tf.ones([1, 10])
w = tf.Variable(tf.fill([10, 5], 0.5), name="w")
out_target = tf.zeros([5])


def out():
    return tf.matmul(x, w)


def loss():
    return tf.reduce_mean(tf.square(out() - out_target))


if __name__ == "__main__":
    with tf.GradientTape(persistent=True) as tape:
        o = out()
        value = tf.reduce_mean(tf.square(o - out_target))
    part1 = tape.gradient(value, o)  # d loss / d out, shape (1, 5)
    part2 = tape.jacobian(o, w)  # d out / d w, per element: (1, 5, 10, 5)
    print(tf.einsum("ij,ijkl->kl", part1, part2) - tape.gradient(value, w))
