"""A TensorFlow 2 loop with a tf.compat.v1 momentum optimizer, writing a file
after every update. At --step 2 the update of step 2 must not be applied, and
nothing after it may be written."""

import os
import sys

import tensorflow as tf

out = sys.argv[1]
w = tf.Variable([1.0, 2.0])
optimizer = tf.compat.v1.train.MomentumOptimizer(0.1, momentum=0.9)
before_update = []

for step in range(3):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    grads = tape.gradient(loss, [w])
    before_update.append(w.numpy().copy())
    optimizer.apply_gradients(zip(grads, [w]))
    with open(os.path.join(out, f"after_update_{step + 1}.txt"), "w") as fh:
        fh.write(str(w.numpy().tolist()))
