"""A notebook's loss and training step whose call makes Keras warn (a list handed to a model
of one named input), each noting the TensorFlow logger's level it runs with. With "python"
each is called as a notebook would call it; with "tfviz" each is checked in this process,
the logger at INFO for the first check and at WARNING for the second. The warnings
go to stderr (Python shows a line's warning once in a process, under tfviz as under python);
the levels each first call ran with are printed as JSON."""

import json
import logging
import sys

import numpy as np
import tensorflow as tf

inputs = tf.keras.Input((4,), name="features")
model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(inputs))
optimizer = tf.keras.optimizers.SGD(0.1)
x = np.ones((2, 4), "float32")
levels: list[int] = []


def loss():
    levels.append(tf.get_logger().level)
    return tf.reduce_mean(model([x]) ** 2)


def train_step(batch):
    levels.append(tf.get_logger().level)
    with tf.GradientTape() as tape:
        value = tf.reduce_mean(model([batch]) ** 2)
    grads = tape.gradient(value, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


first_calls = []
for level, call in ((logging.INFO, "loss"), (logging.WARNING, "step")):
    tf.get_logger().setLevel(level)
    levels.clear()
    if sys.argv[1] == "python":
        with tf.GradientTape():
            loss() if call == "loss" else train_step(x)
    else:
        import tfviz

        report = tfviz.check(loss) if call == "loss" else tfviz.check(train_step, args=(x,))
        assert report.ok, str(report)
    first_calls.append(levels[0])
# the caller's own call afterwards, as a notebook's next cell makes it: python has shown this
# line's warning already, so it shows nothing
with tf.GradientTape():
    loss()
print(json.dumps({"levels": first_calls, "after": tf.get_logger().level}))
