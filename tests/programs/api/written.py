"""Every variable an in-process check writes is saved before its write, and put back.

For each bundled example with a target (loaded as a notebook would run it) and for the
training steps below, run in this one process: every live variable's value is read first (the
slow twin's scan, tfviz.program.written.every_live_variable); then tfviz.check runs, and
just before it puts values back the scan is taken again: each variable whose value moved
must have been saved by the fast path, with its value from before. After the check every
variable must hold its value from before. Prints one JSON line per case. With "scan", tfviz
saves every live variable up front (the slow twin) instead, and the same must hold."""

import json
import runpy
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

import tfviz
from tfviz.errors import AnalysisError
from tfviz.program import written
from tfviz.script.discover import pick_target

SLOW = "scan" in sys.argv[1:]
STEPS_ONLY = "steps" in sys.argv[1:]
written.SAVE_AS_WRITTEN = not SLOW
EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def values() -> dict[int, tuple[object, np.ndarray]]:
    return {id(h): (h, v.numpy()) for h, v in written.every_live_variable()}


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


moved_before_restore: list[dict[str, object]] = []
restore = written.WrittenVariables.restore


def checked_restore(self: written.WrittenVariables) -> None:
    now = values()
    moved = [k for k, (_, v) in now.items() if k in BEFORE and not same(v, BEFORE[k][1])]
    unsaved = [k for k in moved if k not in self.saved]
    wrong = [k for k in moved if k in self.saved and not same(self.saved[k][1].numpy(), BEFORE[k][1])]
    moved_before_restore.append({"moved": len(moved), "unsaved": len(unsaved), "wrong": len(wrong)})
    restore(self)


written.WrittenVariables.restore = checked_restore  # type: ignore[method-assign]


def case(name: str, fn, **kwargs) -> None:
    global BEFORE
    moved_before_restore.clear()
    BEFORE = values()
    try:
        said = "ok" if tfviz.check(fn, **kwargs).ok else "problems"
    except AnalysisError as exc:
        said = str(exc).splitlines()[0]
    after = values()
    changed = [k for k, (_, v) in BEFORE.items() if k in after and not same(after[k][1], v)]
    seen = moved_before_restore[0] if moved_before_restore else {}
    row = {"case": name, "variables": len(BEFORE), **seen, "changed_after": len(changed), "said": said}
    print(json.dumps(row), flush=True)


def examples() -> None:
    for path in [] if STEPS_ONLY else sorted(EXAMPLES.glob("*.py")):
        if path.name.startswith(("program_", "train_", "__")):
            continue  # training programs: run to their end at import, checked as programs
        module = type(sys)("tfviz_example")
        module.__dict__.update(runpy.run_path(str(path), run_name="tfviz_example"))
        try:
            _, target = pick_target(module, None, str(path))
        except AnalysisError:
            continue
        case(path.name, getattr(target, "python_function", target))


BEFORE: dict[int, tuple[object, np.ndarray]] = {}
examples()

# training steps, stopped before their update: what they write before it is put back
tf.keras.utils.set_random_seed(1)
model = tf.keras.Sequential(
    [tf.keras.Input((4,)), tf.keras.layers.Dense(8), tf.keras.layers.BatchNormalization(),
     tf.keras.layers.Dropout(0.5), tf.keras.layers.Dense(1)]
)
optimizer = tf.keras.optimizers.Adam(0.01)
generator = tf.random.Generator.from_seed(3)
counter = tf.Variable(0, dtype=tf.int64, trainable=False)
x, y = tf.random.normal([8, 4]), tf.random.normal([8, 1])


def loss_with_state():
    counter.assign_add(1)
    noise = generator.normal([8, 1])
    return tf.reduce_mean((model(x, training=True) + noise - y) ** 2)


def train_step(inputs, targets):
    with tf.GradientTape() as tape:
        value = tf.reduce_mean((model(inputs, training=True) - targets) ** 2)
    grads = tape.gradient(value, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    counter.assign_add(1)
    return value


compiled_step = tf.function(train_step)
compiled_step(x, y)  # the optimizer's slots exist, and the step has run, as in a session
case("loss_with_state", loss_with_state)
case("train_step", train_step, args=(x, y))
case("compiled_step", compiled_step, args=(x, y))
