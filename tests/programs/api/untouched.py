"""A notebook-style session: a model built and trained a step, tfviz.check(loss) called twice
on the live objects, then training goes on. Prints, as JSON: what changed in the process
between before and after the checks (patched attributes, callbacks, streams, folders,
random state...), both reports' verdicts, TensorFlow's own answer for each variable, and the
weights after the training that follows. Run with "control" to skip the checks."""

import gc
import json
import logging
import os
import signal
import sys
import threading
import warnings

import numpy as np
import tensorflow as tf

CHECK = sys.argv[1:] != ["control"]

tf.keras.utils.set_random_seed(0)
model = tf.keras.Sequential(
    [
        tf.keras.Input((4,)),
        tf.keras.layers.Dense(8, activation="relu"),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.Dropout(0.3),
        tf.keras.layers.Dense(1),
    ]
)
frozen = tf.Variable(tf.ones([1]), name="frozen")
optimizer = tf.keras.optimizers.Adam(0.01)
x = tf.random.normal([16, 4])
y = tf.random.normal([16, 1])


def loss():
    out = model(x, training=True)
    return tf.reduce_mean((out - y) ** 2) + tf.reduce_sum(tf.stop_gradient(frozen) * 0.0)


def train_step(inputs, targets):
    with tf.GradientTape() as tape:
        out = model(inputs, training=True)
        value = tf.reduce_mean((out - targets) ** 2) + tf.reduce_sum(tf.stop_gradient(frozen) * 0.0)
    variables = model.trainable_variables
    optimizer.apply_gradients(zip(tape.gradient(value, variables), variables))
    return value


def train(steps):
    for _ in range(steps):
        train_step(x, y)


def fingerprint():
    from tensorflow.python.eager import context

    ids = {}
    for name, mod in list(sys.modules.items()):
        if not name.startswith(("tensorflow", "keras", "tfviz")) or mod is None:
            continue
        for key, value in list(vars(mod).items()):
            ids[f"{name}.{key}"] = id(value)
            if isinstance(value, type) and value.__module__ == name:
                for ck, cv in list(vars(value).items()):
                    ids[f"{name}.{key}.{ck}"] = id(cv)
    return {
        "ids": ids,
        "callbacks": len(context.context().op_callbacks),
        "streams": [id(sys.stdout), id(sys.stderr), os.fstat(1).st_ino, os.fstat(2).st_ino],
        "cwd": os.getcwd(),
        "argv": list(sys.argv),
        "path": list(sys.path),
        "main": id(sys.modules["__main__"]),
        "threads": threading.active_count(),
        "gc": [gc.isenabled(), gc.get_freeze_count()],
        "signals": [str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM)],
        "warnings": len(warnings.filters),
        "loggers": [logging.getLogger(n).level for n in ("tensorflow", "absl")],
        "environ": dict(os.environ),
        "numpy": np.random.get_state()[1][:4].tolist(),
        "weights": [v.numpy().tolist() for v in model.variables + [frozen]],
    }


train(1)  # the optimizer's slots exist, as in a session that has trained
out = {}
if CHECK:
    import tfviz

    before = fingerprint()
    reports = [tfviz.check(loss), tfviz.check(loss), tfviz.check(train_step, args=(x, y))]
    after = fingerprint()
    out["changed"] = sorted(
        k for k in before["ids"] if k in after["ids"] and before["ids"][k] != after["ids"][k]
    )
    out["differs"] = sorted(k for k in before if k != "ids" and before[k] != after[k])
    out["verdicts"] = [{v.name: [v.status, v.kind] for v in r.variables} for r in reports]
    out["problems"] = [[(p.kind, p.source.line if p.source else None) for p in r.problems] for r in reports]
    out["status"] = [int(r.status) for r in reports]
# TensorFlow's own answer, taken in both runs (it runs a step's forward pass too)
with tf.GradientTape() as tape:
    value = loss()
sources = model.trainable_variables + [frozen]
out["truth"] = {
    name: g is not None
    for name, g in zip(
        [f"model.{v.path}" for v in model.trainable_variables] + ["frozen"], tape.gradient(value, sources)
    )
}
train(3)
out["trained"] = [v.numpy().tolist() for v in model.variables]
print(json.dumps(out))
