"""A step whose gradients are not finite only because a LossScaleOptimizer scaled its loss
(mixed precision) is said so, and one whose op makes a NaN of its own is not: each against
TensorFlow's own gradients of the program's first step, with its loss scaled as the program
scales it and unscaled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs" / "lossscale"
TFVIZ = Path(sys.executable).with_name("tfviz")

#: runs a program to its first gradient call, in a process of its own (the program sets Keras'
#: global dtype policy), and prints whether each gradient there is finite, by Keras' path;
#: with "unscaled", the LossScaleOptimizer's scale_loss hands the loss back as it is
ORACLE = """
import json, runpy, sys
import tensorflow as tf
from keras.src.optimizers.loss_scale_optimizer import LossScaleOptimizer

class First(Exception):
    pass

said = {}
original = tf.GradientTape.gradient

def gradient(self, target, sources, *args, **kwargs):
    grads = original(self, target, sources, *args, **kwargs)
    pairs = [(s.path, g) for s, g in zip(sources, grads) if g is not None]

    def note(*values):
        said.update({p: bool(tf.reduce_all(tf.math.is_finite(v))) for (p, _), v in zip(pairs, values)})
        raise First()

    tf.py_function(note, [g for _, g in pairs], Tout=[]) if not tf.executing_eagerly() else note(
        *[g for _, g in pairs]
    )
    return grads

tf.GradientTape.gradient = gradient
import keras
compile_ = keras.Model.compile
keras.Model.compile = lambda self, *a, **k: compile_(self, *a, **{**k, "jit_compile": False})
if sys.argv[2] == "unscaled":
    LossScaleOptimizer.scale_loss = lambda self, loss: loss
try:
    runpy.run_path(sys.argv[1], run_name="__main__")
except Exception:
    pass
print(json.dumps(said))
"""


#: runs a program to its end, in a process of its own, and prints for each gradient call
#: whether every gradient is finite and the LossScaleOptimizer's scale as that step runs
STEPS = """
import json, runpy, sys
import tensorflow as tf
from keras.src.optimizers.loss_scale_optimizer import LossScaleOptimizer

steps, scalers = [], []
scale_loss = LossScaleOptimizer.scale_loss

def noted(self, loss):
    scalers.append(self)
    return scale_loss(self, loss)

original = tf.GradientTape.gradient

def gradient(self, target, sources, *args, **kwargs):
    grads = original(self, target, sources, *args, **kwargs)
    fine = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads if g is not None])
    scaler = scalers[-1]

    def note(f):  # the scale as the step runs, before its update halves or doubles it
        scale = scaler.dynamic_scale.numpy() if scaler.built else scaler.initial_scale
        steps.append((bool(f.numpy()), float(scale)))
        return True

    if tf.executing_eagerly():
        note(fine)
        return grads
    done = tf.py_function(note, [fine], Tout=tf.bool)
    with tf.control_dependencies([done]):  # the update takes the gradients after the note
        return [None if g is None else tf.identity(g) for g in grads]

LossScaleOptimizer.scale_loss = noted
tf.GradientTape.gradient = gradient
runpy.run_path(sys.argv[1], run_name="__main__")
print(json.dumps(steps))
"""


def steps_of(program: Path) -> list[tuple[bool, float]]:
    out = subprocess.run(
        [sys.executable, "-c", STEPS, str(program)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return [(bool(f), float(s)) for f, s in json.loads(out.stdout.strip().splitlines()[-1])]


def first_step_finite(program: Path, scaling: str) -> dict[str, bool]:
    out = subprocess.run(
        [sys.executable, "-c", ORACLE, str(program), scaling], capture_output=True, text=True, timeout=300
    )
    said: dict[str, bool] = json.loads(out.stdout.strip().splitlines()[-1])
    assert said, out.stderr[-2000:]
    return said


def check(program: Path) -> tuple[int, dict]:
    r = subprocess.run(
        [str(TFVIZ), "check", str(program), "--json"], capture_output=True, text=True, timeout=600
    )
    return r.returncode, json.loads(r.stdout)


@pytest.mark.parametrize(
    ("name", "scale"), [("overflow_then_trains.py", "1.67772e+07"), ("fit_overflow.py", "32768")]
)
def test_an_overflow_of_the_loss_scale_is_said_to_be_the_scale_s(name: str, scale: str) -> None:
    """A custom loop's own LossScaleOptimizer, and the one Keras' compile() wraps around fit's."""
    program = PROGRAMS / name
    scaled, plain = first_step_finite(program, "scaled"), first_step_finite(program, "unscaled")
    overflowed = {p for p, fine in scaled.items() if not fine}
    assert overflowed and all(plain.values())  # TensorFlow: not finite scaled, finite unscaled
    code, doc = check(program)
    assert code == 1 and doc["ok"] is False  # the gradients the step returned are not finite
    nan = {v["tf_name"] for v in doc["variables"] if v["kind"] == "nan"}
    assert nan == overflowed
    for v in doc["variables"]:
        if v["kind"] == "nan":
            assert f"only because the loss is scaled by {scale}" in v["explanation"]
    (problem,) = [p for p in doc["problems"] if p["kind"] == "nan"]
    assert problem["severity"] == "warning"
    assert "only because the loss is scaled" in problem["message"] and "unscaled" in problem["message"]
    assert "initial_scale" in problem["hint"] and "domain" not in problem["hint"]
    assert not [p for p in doc["problems"] if p["severity"] == "error"]


def test_a_nan_of_the_program_s_own_is_not_put_on_the_scale() -> None:
    program = PROGRAMS / "nan_scaled.py"
    plain = first_step_finite(program, "unscaled")
    assert not any(plain.values())  # TensorFlow: not finite with the loss unscaled either
    code, doc = check(program)
    assert code == 1 and doc["ok"] is False
    (problem,) = [p for p in doc["problems"] if p["kind"] == "nan"]
    assert problem["severity"] == "error" and problem["op_type"] == "Sqrt"
    assert problem["source"]["line"] == 20 and "scaled" not in problem["message"]
    assert {v["tf_name"] for v in doc["variables"] if v["kind"] == "nan"} == set(plain)


@pytest.mark.parametrize("program", ["overflow_then_trains.py", "nan_scaled.py"])
def test_the_note_gives_the_scale(program: str) -> None:
    _, doc = check(PROGRAMS / program)
    assert any("loss scale is" in n for n in doc["notes"])


@pytest.mark.parametrize("name", ["overflow_then_trains.py", "nan_scaled_loop.py"])
def test_until_nan_passes_the_steps_the_loss_scale_overflows(name: str) -> None:
    """``--until nan`` stops at the first step whose gradients are not finite at a loss scale of
    1 or less (there the scaled gradient is the gradient), and counts those before it, which the
    LossScaleOptimizer skips and halves its scale for, in a note: by TensorFlow's gradients and
    the optimizer's scale at each step of the program run under ``python``."""
    program = PROGRAMS / name
    steps = steps_of(program)
    fires = next((i for i, (fine, scale) in enumerate(steps, 1) if not fine and scale <= 1.0), None)
    skipped = [scale for fine, scale in steps[: fires or len(steps)] if not fine and scale > 1.0]
    assert skipped  # each program's scale starts too high to fit float16 at first
    r = subprocess.run(
        [str(TFVIZ), "check", str(program), "--until", "nan", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    doc = json.loads(r.stdout)
    watch = doc["watch"]
    if fires is None:
        assert watch["fired"] is None and watch["steps"] == len(steps)
    else:
        assert (watch["fired"], watch["step"]) == ("nan", fires)
        (problem,) = [p for p in doc["problems"] if p["kind"] == "nan"]
        assert problem["severity"] == "error" and problem["op_type"] == "Sqrt"  # its own, not the scale's
    (note,) = [n for n in doc["notes"] if "LossScaleOptimizer skipped" in n]
    assert f"skipped {len(skipped)} steps" in note
    assert f"at loss scales {min(skipped):g} to {max(skipped):g}" in note
