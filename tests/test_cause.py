"""The cause is as right as the verdict: for each bug report below, the kind, the op and the
line tfviz names, checked through the installed ``tfviz`` against what TensorFlow itself
returns for the same loss."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import EXAMPLES, ROOT, line_of

LOSSES = ROOT / "tests" / "programs" / "losses"
TFVIZ = Path(sys.executable).with_name("tfviz")


def _check(path: Path, *args: str) -> tuple[int, dict]:
    done = subprocess.run(
        [str(TFVIZ), "check", str(path), "--json", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)


def _tensorflow(path: Path, names: list[str]):
    """TensorFlow's own gradients of the script's ``loss()`` for the variables ``names``
    (module-level names), or the exception its tape raises."""
    import tensorflow as tf

    ns = runpy.run_path(str(path))
    variables = [ns[n] for n in names]
    with tf.GradientTape() as tape:
        loss = ns["loss"]()
    try:
        return tape.gradient(loss, variables)
    except Exception as exc:  # noqa: BLE001 - TensorFlow's answer, whatever it raises
        return exc


def test_numpy_function_is_named_at_its_line_not_as_an_unused_value():
    path = LOSSES / "numpy_function_sliced.py"
    (g,) = _tensorflow(path, ["w"])
    assert g is None  # TensorFlow: no gradient through tf.numpy_function
    rc, report = _check(path)
    assert rc == 1
    (w,) = report["variables"]
    assert (w["status"], w["kind"], w["grad_norm"]) == ("disconnected", "py_function", None)
    (p,) = report["problems"]
    assert p["kind"] == "py_function" and p["op_type"] == "PyFunc"
    assert p["source"]["line"] == line_of(path, "tf.numpy_function(")


def test_a_custom_gradient_missing_a_variable_is_named_with_tensorflows_error():
    path = LOSSES / "custom_gradient_missing_variable.py"
    raised = _tensorflow(path, ["w", "act_scale"])
    assert isinstance(raised, ValueError) and "Must return gradient for each variable" in str(raised)
    rc, report = _check(path)
    assert rc == 1
    assert {(v["status"], v["kind"]) for v in report["variables"]} == {("broken", "unimplemented")}
    (p,) = report["problems"]
    assert p["kind"] == "unimplemented" and "Must return gradient for each variable" in p["message"]
    # at the gradient function, where the fix goes, and named as the function the user wrote
    assert p["source"]["line"] == line_of(path, "def grad_fn(")
    assert "scaled_relu (custom gradient)" in report["variables"][0]["explanation"]
    assert "please report" not in json.dumps(report)


def test_softmax_cross_entropy_gives_its_labels_no_second_order_gradient_whatever_the_values():
    import tensorflow as tf

    path = LOSSES / "softmax_labels_second_order.py"
    ns = runpy.run_path(str(path))
    with tf.GradientTape() as tape:
        loss = ns["loss"]()
    grads = tape.gradient(loss, ns["teacher"].trainable_variables)
    assert all(g is not None and not np.any(g.numpy()) for g in grads)  # TensorFlow: exact zeros
    rc, report = _check(path)
    assert rc == 1  # the teacher never trains: an error, not a warning
    (p,) = report["problems"]
    assert (p["kind"], p["severity"], p["op_type"]) == ("zero", "error", "SoftmaxCrossEntropyWithLogits")
    assert "whatever the values" in p["message"] and "ReLU" not in p["hint"]
    assert p["source"]["line"] == line_of(path, "softmax_cross_entropy_with_logits(")
    # the hint's rewrite does give the labels a second-order gradient, as TensorFlow computes it
    teacher, x, logits = ns["teacher"], ns["x"], ns["logits"]
    with tf.GradientTape() as tape:
        labels = tf.nn.softmax(teacher(x))
        with tf.GradientTape() as inner:
            inner.watch(logits)
            ce = -tf.reduce_sum(labels * tf.nn.log_softmax(logits), axis=-1)
        g = inner.gradient(ce, logits)
        penalty = tf.reduce_sum(g * g)
    assert all(np.any(g.numpy()) for g in tape.gradient(penalty, teacher.trainable_variables))


def test_a_gradient_that_does_not_exist_has_no_norm():
    """In a tf.while_loop TensorFlow hands back zeros for a cut variable, eagerly None: a
    gradient that does not exist is not a gradient of size 0."""
    import tensorflow as tf

    path = EXAMPLES / "rnn_while_int_cast.py"
    ns = runpy.run_path(str(path))
    with tf.GradientTape() as tape:
        loss = ns["loss"]()
    assert tape.gradient(loss, ns["cell"].w_skip) is None  # eagerly: None
    rc, report = _check(path)
    row = next(v for v in report["variables"] if v["name"] == "cell.w_skip")
    assert row["status"] == "disconnected" and row["grad_norm"] is None
    text = subprocess.run(
        [str(TFVIZ), "check", str(path)], capture_output=True, text=True, timeout=600, cwd=ROOT
    ).stdout
    (line,) = [ln for ln in text.splitlines() if "cell.w_skip" in ln and "disconnected" in ln]
    assert "|grad|" not in line


@pytest.mark.parametrize("until", [("--until", "none")])
def test_a_gradient_the_program_drops_as_none_is_not_called_untrained(until):
    """The program filters out None gradients before its update (TensorFlow's own gradients
    reach it now): that is the disconnection, not an update that forgot the variable."""
    rc, report = _check(EXAMPLES / "train_cond_branch.py", *until)
    aux = [p for p in report["problems"] if "w_aux" in p["variables"]]
    assert [p["kind"] for p in aux] == ["zero"]
