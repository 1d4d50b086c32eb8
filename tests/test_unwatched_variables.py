"""A variable made with ``trainable=False`` that the step asks the gradient of.

A tape watches only trainable variables on its own, so TensorFlow returns None for it
however the loss reads it. tfviz's trace watched every source it was asked about, said
the variable was connected, and reported the eager answer's disagreement as a case to
report. The oracle is TensorFlow's own tape, run as the program runs it.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT, line_of
from tests.test_commands import tfviz

UNWATCHED = ROOT / "tests" / "programs" / "unwatched"


def _tape_answer(watch: bool) -> tuple[bool, bool]:
    """Whether TensorFlow gives w and b a gradient, eagerly and in a tf.function."""
    import tensorflow as tf

    w = tf.Variable(tf.ones([4, 1]), trainable=False)
    b = tf.Variable(0.0)
    x = tf.ones([2, 4])

    def grads():
        with tf.GradientTape() as tape:
            if watch:
                tape.watch(w)
            loss = tf.reduce_sum(x @ w + b)
        return [g is not None for g in tape.gradient(loss, [w, b])]

    eager = grads()
    graph = tf.function(lambda: tf.constant(grads()))().numpy().tolist()
    assert eager == graph
    return eager[0], eager[1]


@pytest.mark.parametrize("name", ["nontrainable_loop.py", "nontrainable_function.py"])
def test_a_variable_made_untrainable_is_named_as_never_watched(name, tmp_path):
    assert _tape_answer(watch=False) == (False, True)
    path = UNWATCHED / name
    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    by_name = {v["name"]: v for v in report["variables"]}
    assert by_name["w"]["status"] == "disconnected" and by_name["w"]["kind"] == "outside_tape"
    assert by_name["b"]["status"] == "connected"
    (p,) = report["problems"]
    assert p["kind"] == "outside_tape" and p["variables"] == ["w"]
    assert "w is not trainable (trainable=False), so the tape never watches it" in p["message"]
    made = line_of(path, "w = tf.Variable(")
    assert (
        f"Make it trainable where it is made ({path.name}:{made})" in p["hint"]
        and "tape.watch(w)" in p["hint"]
    )
    assert p["source"]["line"] == line_of(path, "loss = tf.reduce_mean")


def test_an_untrainable_variable_the_step_watches_itself_gets_its_gradient(tmp_path):
    assert _tape_answer(watch=True) == (True, True)
    done = tfviz("check", str(UNWATCHED / "watched_on_purpose.py"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert {v["name"]: v["status"] for v in report["variables"]} == {"w": "connected", "b": "connected"}
    assert report["problems"] == []


def test_a_tape_told_to_watch_nothing_of_the_model_cuts_every_variable_in_one_problem(tmp_path):
    import tensorflow as tf

    path = UNWATCHED / "told_nothing.py"
    script: dict = {}
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        exec(compile(path.read_text(), str(path), "exec"), script)  # noqa: S102 - as python runs it
    model, x, y = script["model"], script["x"], script["y"]
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x)
        loss = tf.reduce_mean((model(x) - y) ** 2)
    assert all(g is None for g in tape.gradient(loss, model.trainable_variables))  # TensorFlow's answer

    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert {v["status"] for v in report["variables"]} == {"disconnected"}
    assert {v["kind"] for v in report["variables"]} == {"outside_tape"}
    (p,) = report["problems"]  # one problem, not one per variable, and no disagreement
    assert len(p["variables"]) == 4 and p["source"]["line"] == line_of(path, "loss = tf.reduce_mean")
    assert "watch_accessed_variables=False" in p["message"] and "tape.watch" in p["hint"]


def test_a_tape_told_to_watch_the_model_is_healthy(tmp_path):
    done = tfviz("check", str(UNWATCHED / "told_the_model.py"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert {v["status"] for v in report["variables"]} == {"connected"} and report["problems"] == []


def test_a_keras_variable_handed_to_tape_watch_is_said_in_one_line_with_what_to_watch(tmp_path):
    path = UNWATCHED / "watch_keras_variables.py"
    with pytest.raises(ValueError, match="of type 'Variable', not tf.Tensor or tf.Variable"):
        exec(compile(path.read_text(), str(path), "exec"), {})  # noqa: S102 - as python runs it
    done = tfviz("check", str(path), cwd=tmp_path)
    assert done.returncode == 2 and not done.stdout
    first = done.stderr.splitlines()[0]
    assert first.endswith(
        f"watch_keras_variables.py:{line_of(path, 'tape.watch(')}: the program raised before its first"
        " gradient computation: ValueError: tape.watch was handed Keras variable"
        " 'sequential/dense/kernel', which is not a tf.Variable (Keras 3): watch the tf.Variable"
        " it holds, [v.value for v in"
        " model.trainable_variables]"
    )
