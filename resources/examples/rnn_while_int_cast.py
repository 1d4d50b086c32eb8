"""An RNN written with tf.while_loop whose learned skip is cut by an integer cast.

A "skip RNN": the cell (a `tf.Module` with weight matrices `w_x`, `w_h`, `b`)
reads one time step per iteration of a `tf.while_loop`, and a learned skip
head (`w_skip`) decides how far to jump ahead after each step. The jump is an
index into the sequence, so the code turns it into an integer with
`tf.cast(..., tf.int32)`; a Dense readout classifies the last hidden state.

The bug: an integer has no gradient, so `cell.w_skip` never learns: its only
path to the loss goes through the `Cast` to int32. Inside the while loop
TensorFlow does not return None for it but a tensor of zeros. tfviz reports
`cell.w_skip` disconnected by the integer cast, and the cell's other weights
and the readout connected.
"""

import keras
import tensorflow as tf

BATCH, TIME, FEATURES, HIDDEN, CLASSES, STEPS = 4, 20, 3, 8, 2, 6


class SkipCell(tf.Module):
    def __init__(self, name="cell"):
        super().__init__(name=name)
        init = tf.random.stateless_normal
        self.w_x = tf.Variable(init([FEATURES, HIDDEN], seed=[0, 1]) * 0.5, name="w_x")
        self.w_h = tf.Variable(init([HIDDEN, HIDDEN], seed=[0, 2]) * 0.3, name="w_h")
        self.b = tf.Variable(tf.zeros([HIDDEN]), name="b")
        self.w_skip = tf.Variable(init([HIDDEN, 1], seed=[0, 3]) * 0.5, name="w_skip")

    def __call__(self, sequence):
        batch = tf.range(BATCH)

        def body(step, position, h):
            x_t = tf.gather_nd(sequence, tf.stack([batch, position], axis=1))
            h = tf.tanh(x_t @ self.w_x + h @ self.w_h + self.b)
            jump = tf.cast(2.0 * tf.sigmoid(h @ self.w_skip), tf.int32)  # the cut
            position = tf.minimum(position + 1 + jump[:, 0], TIME - 1)
            return step + 1, position, h

        _, _, h = tf.while_loop(
            lambda step, position, h: step < STEPS, body,
            [tf.constant(0), tf.zeros([BATCH], tf.int32), tf.zeros([BATCH, HIDDEN])])
        return h


cell = SkipCell()
readout = keras.layers.Dense(CLASSES, name="readout")
sequence = tf.random.stateless_normal([BATCH, TIME, FEATURES], seed=[1, 0])
labels = tf.constant([0, 1, 1, 0])
ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def loss():
    return ce(labels, readout(cell(sequence)))
