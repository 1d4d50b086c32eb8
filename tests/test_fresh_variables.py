"""A step that makes its variables anew each time it runs: training never updates them.

A Keras layer constructed inside ``call()``, or a ``tf.Variable`` made inside a
``tf.function`` step, is new at every call. The program's first step cannot tell such a
variable from a layer built lazily; tfviz's second run of the step can. The oracle is
TensorFlow itself: two runs of the step read different variables (the head's weights are
never the same twice, and never among the model's trainable variables), and the
``tf.function`` program dies on its second trace.
"""

from __future__ import annotations

import json
import runpy

import pytest

from tests.conftest import ROOT, line_of
from tests.test_commands import tfviz

FRESH = ROOT / "tests" / "programs" / "fresh"


def test_a_layer_made_in_call_is_named_at_its_line_as_never_trained(tmp_path):
    import tensorflow as tf

    path = FRESH / "layer_in_call.py"
    script = runpy.run_path(str(path))  # as python runs it: no error at all
    model, x = script["model"], script["x"]
    read = []
    for _ in range(2):
        with tf.GradientTape() as tape:
            model(x)
        read.append({id(v) for v in tape.watched_variables()})
    kept = {id(v.value) for v in model.trainable_variables}
    assert len(read[0] - kept) == 2 and read[0] - kept != read[1] - kept  # a new kernel and bias each run

    done = tfviz("check", str(path), cwd=tmp_path)
    assert done.returncode == 2 and not done.stdout
    assert (
        f"layer_in_call.py:{line_of(path, 'return head(h)')}: the step creates a Dense layer's kernel anew"
        in done.stderr
    )
    assert "so training never updates it" in done.stderr and "__init__" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_variable_made_in_a_tf_function_step_is_named_at_itsline_of(tmp_path):
    path = FRESH / "variable_in_function.py"
    with pytest.raises(ValueError, match="singleton tf.Variables"):
        runpy.run_path(str(path))
    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["line"] == line_of(path, "w = tf.Variable(") and error["file"] == str(path)
    assert error["message"].startswith("the step creates tf.Variable 'Variable' anew each time it runs")
    assert "tf.function refuses it" in error["message"] and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "name",
    [
        "lazy_build_in_tf_function_sequential_dense.py",
        "lazy_build_in_strategy_run_subclassed_experts.py",
        "custom_gradient_and_recompute_grad_residual_mlp.py",
    ],
)
def test_a_model_its_first_step_builds_is_not_refused(name, tmp_path):
    """A model built lazily by the step's first call, inside tf.function or strategy.run,
    keeps its variables: the second run makes none, and the program gets its report."""
    path = ROOT / "tests" / "programs" / "corpus" / name
    done = tfviz("check", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "gradients flow" in done.stdout and "anew each time it runs" not in done.stderr
