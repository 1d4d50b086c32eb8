"""Seed 3, written anew: split a gradient into chain-rule parts.

    h = W x + b,   y = tanh(h),   loss = mse(y, y0)

``tf.gradients(loss, h)`` has h's shape and ``tf.gradients(h, W)`` has W's:
each sums over its target's elements, so the two "parts" cannot be
multiplied back into ``tf.gradients(loss, W)``. The per-element Jacobians
can: J(y,h) @ J(h,x) == J(y,x). See it with

    tfviz jacobian seed3_chain_rule_split.py --of y --wrt W --via h

(or in the app: right-click ``y``, "Jacobian of this w.r.t. …"). The
gradient itself flows fine: ``tfviz check`` reports ok.
"""

import tensorflow as tf

x = tf.constant([[0.5, -1.0, 2.0, 0.25]])  # one example, 4 features
y0 = tf.constant([[0.1, -0.3, 0.7]])  # its label, 3 outputs
W = tf.Variable(tf.random.stateless_normal([4, 3], seed=[3, 3]) * 0.5, name="W")
b = tf.Variable([0.1, -0.2, 0.05], name="b")


def loss():
    h = tf.add(tf.matmul(x, W), b, name="h")
    y = tf.tanh(h, name="y")
    return tf.reduce_mean(tf.square(y - y0), name="mse")


if __name__ == "__main__":
    with tf.GradientTape(persistent=True) as tape:
        h = tf.matmul(x, W) + b
        y = tf.tanh(h)
        value = tf.reduce_mean(tf.square(y - y0))
    j_yh = tape.jacobian(y, h)  # (1, 3, 1, 3)
    j_hw = tape.jacobian(h, W)  # (1, 3, 4, 3)
    j_yw = tape.jacobian(y, W)  # (1, 3, 4, 3)
    product = tf.reshape(tf.reshape(j_yh, [3, 3]) @ tf.reshape(j_hw, [3, 12]), [1, 3, 4, 3])
    print("max |J(y,h) J(h,W) - J(y,W)| =", float(tf.reduce_max(tf.abs(product - j_yw))))
    print("tf.gradients-style sum:", tape.gradient(y, W).shape, "== W's shape")
