"""An op whose gradient is zero wherever it is defined (tf.sign, tf.floor) on the loss's
path: every gradient before it is exactly zero, and the hint is the straight-through
estimator, not the dead-ReLU advice. TensorFlow's tape is the oracle."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

from tests.conftest import ROOT
from tests.test_commands import tfviz

STEPWISE = ROOT / "tests" / "programs" / "stepwise"


def _line(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def _grads(path: Path, straight: bool) -> list[float]:
    import tensorflow as tf

    script = runpy.run_path(str(path))
    model, x, y = script["model"], script["x"], script["y"]
    with tf.GradientTape() as tape:
        out = model(x)
        pred = out + tf.stop_gradient(tf.sign(out) - out) if straight else tf.sign(out)
        loss = tf.reduce_mean(tf.square(pred - y))
    return [float(tf.norm(g)) for g in tape.gradient(loss, model.trainable_variables)]


def test_sign_on_the_path_zeroes_every_gradient_and_points_at_a_straight_through_estimator(tmp_path):
    path = STEPWISE / "sign_output.py"
    assert _grads(path, straight=False) == [0.0] * 4
    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert {(v["status"], v["kind"]) for v in report["variables"]} == {("connected", "zero")}
    (p,) = report["problems"]
    assert p["kind"] == "zero" and p["op_type"] == "Sign"
    assert p["source"]["line"] == _line(path, "pred = tf.sign(")
    assert "straight-through" in p["hint"] and "ReLU" not in p["hint"]


def test_a_straight_through_estimator_is_healthy(tmp_path):
    path = STEPWISE / "straight_through.py"
    assert all(n > 0 for n in _grads(path, straight=True))
    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["problems"] == []
