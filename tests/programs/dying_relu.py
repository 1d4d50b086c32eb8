"""A compiled custom loop whose ReLU dies after two optimizer updates.

    python dying_relu.py [--tapes 1|2] [--epochs 2] [--nested]

Every input is 1, so each batch gives the same gradients. ``gate`` is
``relu(x * kernel + bias)`` with kernel = bias = 1 and the loss is its mean,
so SGD (learning rate 0.6) lowers both by 0.6 per step: the pre-activation is
2.0 at step 1, 0.8 at step 2 and -0.4 from step 3 on, where the ReLU is dead
and both gradients are exactly zero. ``scale`` (a weight fitted towards 1,
starting at 3) stays connected throughout.

``--tapes 1``: one tape, one gradient computation per call of ``train_step``.
``--tapes 2``: two tapes in one step, ``scale``'s first, then ``gate``'s
(computations 2c-1 and 2c in call c), each with its own optimizer, as in a GAN.
``--nested``: the tape and the optimizer are inside a second ``tf.function``
that ``train_step`` calls.

56 rows in batches of 16: the fourth batch has 8 rows, so its first call
traces ``train_step`` again (a new input shape); 4 calls per epoch.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--tapes", type=int, choices=(1, 2), default=1)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--nested", action="store_true")
args = parser.parse_args()

gate = tf.keras.layers.Dense(1, activation="relu", kernel_initializer="ones", bias_initializer="ones",
                             name="gate")
scale = tf.keras.layers.Dense(1, use_bias=False, kernel_initializer=tf.keras.initializers.Constant(3.0),
                              name="scale")
gate.build((None, 1))
scale.build((None, 1))
gate_optimizer = tf.keras.optimizers.SGD(0.6)
scale_optimizer = tf.keras.optimizers.SGD(0.6)


def losses(xb):
    scale_loss = tf.reduce_mean(tf.square(scale(xb) - 1.0))
    gate_loss = tf.reduce_mean(gate(xb))
    return scale_loss, gate_loss


def one_tape(xb):
    variables = scale.trainable_variables + gate.trainable_variables
    with tf.GradientTape() as tape:
        scale_loss, gate_loss = losses(xb)
        loss = scale_loss + gate_loss
    grads = tape.gradient(loss, variables)
    gate_optimizer.apply_gradients(zip(grads, variables))
    return loss


def two_tapes(xb):
    with tf.GradientTape() as scale_tape, tf.GradientTape() as gate_tape:
        scale_loss, gate_loss = losses(xb)
    scale_grads = scale_tape.gradient(scale_loss, scale.trainable_variables)
    gate_grads = gate_tape.gradient(gate_loss, gate.trainable_variables)
    scale_optimizer.apply_gradients(zip(scale_grads, scale.trainable_variables))
    gate_optimizer.apply_gradients(zip(gate_grads, gate.trainable_variables))
    return scale_loss + gate_loss


step_body = one_tape if args.tapes == 1 else two_tapes
inner = tf.function(step_body)


@tf.function
def train_step(xb):
    if args.nested:
        return inner(xb)
    return step_body(xb)


dataset = tf.data.Dataset.from_tensor_slices(np.ones((56, 1), np.float32)).batch(16)
for epoch in range(args.epochs):
    for xb in dataset:
        loss = train_step(xb)
    print(f"epoch {epoch + 1}: loss {float(loss):.4f}")
