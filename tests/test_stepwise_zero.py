"""An op whose gradient is zero wherever it is defined (tf.sign, tf.floor) on the loss's
path: every gradient before it is exactly zero, and the hint is the straight-through
estimator, not the dead-ReLU advice. TensorFlow's tape is the oracle."""

from __future__ import annotations

import json

from tests.conftest import ROOT, line_of
from tests.test_commands import tfviz
from tests.test_program_mode import _norm, theirs, truth

STEPWISE = ROOT / "tests" / "programs" / "stepwise"


def _ours(report: dict) -> dict[str, str]:
    return {
        _norm(v["tf_name"]): v["kind"] if v["kind"] in ("nan", "zero") else v["status"]
        for v in report["variables"]
    }


def test_sign_on_the_path_zeroes_every_gradient_and_points_at_a_straight_through_estimator(tmp_path):
    path = STEPWISE / "sign_output.py"
    tf_says = theirs(truth(path))
    assert (
        set(tf_says.values()) == {"zero"} and len(tf_says) == 2
    )  # dense and dense_1 compare alike: a kernel, a bias
    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert _ours(report) == tf_says
    (p,) = report["problems"]
    assert p["kind"] == "zero" and p["op_type"] == "Sign"
    assert p["source"]["line"] == line_of(path, "pred = tf.sign(")
    assert "straight-through" in p["hint"] and "ReLU" not in p["hint"]


def test_a_straight_through_estimator_is_healthy(tmp_path):
    path = STEPWISE / "straight_through.py"
    tf_says = theirs(truth(path))
    assert (
        set(tf_says.values()) == {"connected"} and len(tf_says) == 2
    )  # dense and dense_1 compare alike: a kernel, a bias
    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert _ours(report) == tf_says and report["problems"] == []
