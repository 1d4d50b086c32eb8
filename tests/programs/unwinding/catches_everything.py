"""A training script that catches BaseException around its loop and carries on.

Under tfviz nothing after the diagnosed step may run: not its except, not its
finally, not the lines after the loop (which write files and sleep 20 s).
"""

import os
import signal
import sys
import time

import tensorflow as tf

out = sys.argv[1]
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # a graceful-shutdown hook, as many scripts have
w = tf.Variable([1.0, -2.0])
optimizer = tf.keras.optimizers.SGD(0.1)


def train():
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w)
        grads = tape.gradient(loss, [w])
        optimizer.apply_gradients(zip(grads, [w]))


try:
    train()
except BaseException as exc:  # noqa: BLE001 - what careless scripts do
    with open(os.path.join(out, "caught.txt"), "w") as fh:
        fh.write(f"caught {exc!r}")
finally:
    with open(os.path.join(out, "ckpt.txt"), "w") as fh:  # a checkpoint of untrained weights
        fh.write(str(w.numpy().tolist()))
with open(os.path.join(out, "after_training.txt"), "w") as fh:
    fh.write("trained")
time.sleep(20)
