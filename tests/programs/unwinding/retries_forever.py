"""A script that retries its training whatever goes wrong.

Each retry used to swallow tfviz's unwinding and start again, so tfviz never
answered. Under tfviz the first attempt's step is the end of the program.
"""

import os
import sys

import tensorflow as tf

out = sys.argv[1]
w = tf.Variable(3.0)
optimizer = tf.keras.optimizers.SGD(0.1)


@tf.function
def train_step():
    with tf.GradientTape() as tape:
        loss = w * w
    grads = tape.gradient(loss, [w])
    optimizer.apply_gradients(zip(grads, [w]))
    return loss


for attempt in range(50):
    try:
        for _ in range(2):
            train_step()
        break
    except BaseException:  # noqa: BLE001 - retry whatever went wrong
        with open(os.path.join(out, f"retry_{attempt}.txt"), "w") as fh:
            fh.write("retrying")
        continue
with open(os.path.join(out, "done.txt"), "w") as fh:
    fh.write("done")
