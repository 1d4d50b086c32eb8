"""GUI test script: prints, takes a few seconds (loading data, say), prints again,
then takes one gradient step. The Log panel must show the first line while it waits."""
import time

import tensorflow as tf

print("loading the data…", flush=True)
time.sleep(5)
print("data loaded", flush=True)
w = tf.Variable(1.0, name="w")
with tf.GradientTape() as tape:
    value = tf.square(w)
tape.gradient(value, [w])
