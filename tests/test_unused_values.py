"""A variable that is read, but nothing computed from it reaches the loss.

The classic case: the loss is computed in NumPy (``.numpy()``, ``np.mean``), so the tape
reads the weights and the loss is a new constant; or a penalty term is computed and never
added. tfviz said "the target never reads" the variable, which the user can see is false.
It now names the op where what is made from the variable stops, at its line, and what the
target is computed from instead. TensorFlow's tape is the oracle: no gradient for either.
"""

from __future__ import annotations

import json
import runpy

import pytest

from tests.conftest import ROOT, check_json, line_of
from tests.test_commands import tfviz
from tests.test_program_mode import _norm, analyzed, ours, theirs, truth

UNUSED = ROOT / "tests" / "programs" / "unused"


def test_a_loss_computed_in_numpy_names_where_the_values_stop_and_what_the_loss_is_made_from():
    path = UNUSED / "numpy_loss_loop.py"
    report = analyzed(path)
    assert ours(report) == theirs(truth(path)) == {"w": "disconnected", "b": "disconnected"}
    stop, made = line_of(path, ".numpy()"), line_of(path, "tf.constant(np.mean")
    for v in report.variables:
        assert v.kind == "not_read"
        assert v.explanation == (
            f"read, but what is computed from it ends at Sub 'sub' (numpy_loss_loop.py:{stop}),"
            " read out into Python there (.numpy()), which the target does not use"
        )
    (p,) = report.problems
    assert p.op_type == "Sub" and p.source is not None and p.source.line == stop
    assert p.variables == ["w", "b"]
    assert f"the target is computed from Const 'Const' (numpy_loss_loop.py:{made}) instead" in p.message
    assert "A value read out of TensorFlow carries no gradient back" in p.message
    assert "np.mean" in p.hint
    doc = {o.id: o for o in report.graph.ops}
    assert doc[p.op].status == "not_read"  # the graph marks the op where the values stop


def test_a_value_read_out_with_float_is_named_at_the_read_and_how():
    """``tf.constant(float(tf.reduce_mean(...)))``: TensorFlow gives both variables None; the
    values stop at the mean, which the step read out with float() on that line."""
    path = UNUSED / "numpy_loss_loop.py"
    report = analyzed(path, args=("--float",))
    assert (
        ours(report) == theirs(truth(path, args=("--float",))) == {"w": "disconnected", "b": "disconnected"}
    )
    (p,) = report.problems
    read = line_of(path, "float(tf.reduce_mean")
    assert (p.kind, p.op_type, p.source.line if p.source else None) == ("not_read", "Mean", read)
    assert p.severity == "error"  # read out by the step's own code: not a term left out
    assert (
        f"end at Mean 'Mean' (numpy_loss_loop.py:{read}), read out into Python there (float())" in p.message
    )


def test_a_prediction_read_out_on_a_line_of_its_own_is_named_there_in_a_script_and_in_process():
    """A ``loss()`` that reads its prediction out with ``.numpy()`` on the next line and returns
    ``tf.constant`` of NumPy's mean: no op made the loss, so TensorFlow gives ``w`` None. The
    values stop at the matmul, read out at the next line, where the problem is placed; the
    target is made of Python values.
    The same, through the installed command and through ``tfviz.check`` in this process."""
    import tensorflow as tf

    import tfviz

    path = ROOT / "tests" / "programs" / "losses" / "read_out_then_numpy.py"
    script = runpy.run_path(str(path))
    with tf.GradientTape() as tape:
        value = script["loss"]()
    assert tape.gradient(value, script["w"]) is None  # TensorFlow
    made, read = line_of(path, "pred = tf.matmul"), line_of(path, "values = pred.numpy()")
    name = path.name
    rc, doc = check_json(path)
    in_process = tfviz.check(script["loss"])
    for variables, (p,) in (
        (doc["variables"], doc["problems"]),
        (in_process.to_dict()["variables"], in_process.to_dict()["problems"]),
    ):
        assert [(v["name"], v["status"], v["kind"]) for v in variables] == [("w", "disconnected", "not_read")]
        assert (p["kind"], p["op_type"], p["source"]["line"]) == ("not_read", "MatMul", read)  # the cut
        assert p["severity"] == "error"
        assert p["message"].startswith(
            f"the values computed from these variables end at MatMul 'MatMul' ({name}:{made}),"
            f" read out into Python at {name}:{read} (.numpy()), which the target does not use;"
            " the target itself is made of Python values, by no TensorFlow op."
        )
    assert rc == 1


def test_a_penalty_left_out_of_the_loss_is_named_at_its_line_and_a_variable_never_read_is_still_said_so(
    tmp_path,
):
    import tensorflow as tf

    path = UNUSED / "forgotten_penalty.py"
    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    script = runpy.run_path(str(path))
    with tf.GradientTape() as tape:
        value = script["loss"]()
    grads = tape.gradient(value, [script["w"], script["scale"]])
    assert grads[0] is not None and grads[1] is None
    by_name = {v["name"]: v for v in report["variables"]}
    assert by_name["w"]["status"] == "connected" and by_name["scale"]["status"] == "disconnected"
    (p,) = report["problems"]
    assert p["source"]["line"] == line_of(path, "penalty = ") and p["variables"] == ["scale"]
    assert "read out into Python" not in p["message"]  # left unused, never read out
    assert p["severity"] == "warning"
    assert (
        f"computed from Mean 'Mean' (forgotten_penalty.py:{line_of(path, 'fit = ')}) instead" in p["message"]
    )

    example = ROOT / "resources" / "examples" / "kind_not_read.py"
    done = tfviz("check", str(example), "--json", cwd=tmp_path)
    (p,) = json.loads(done.stdout)["problems"]
    assert p["message"] == "the target never reads forgotten" and p["op"] == ""


def test_a_variable_list_read_before_the_model_was_built_is_named_as_why_nothing_is_trained(tmp_path):
    """TensorFlow's answer: the list the program passes is empty, the model it was read from
    has four trainable variables once built, and Keras' optimizer, handed the empty list,
    fails with a ValueError that says nothing of why."""
    path = UNUSED / "empty_variable_list.py"
    done = tfviz("check", str(path), cwd=tmp_path)
    script: dict = {}
    with pytest.raises(ValueError, match="not enough values to unpack"):
        exec(compile(path.read_text(), str(path), "exec"), script)  # noqa: S102 - as python runs it
    assert script["params"] == [] and len(script["model"].trainable_variables) == 4
    assert done.returncode == 2 and not done.stdout
    read = line_of(path, "params = model.trainable_variables")
    assert (
        f"read from `model.trainable_variables` at empty_variable_list.py:{read}"
        " (`params = model.trainable_variables`) before model was built"
    ) in done.stderr
    assert "model has 4 trainable variables now, and the step trains none of them" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_output_compiled_without_a_loss_names_its_head_where_its_values_stop(tmp_path):
    """Through the installed command, as a user runs it; TensorFlow's step is the oracle."""
    path = UNUSED / "fit_output_without_loss.py"
    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # two variables get no gradient
    report = json.loads(done.stdout)
    t = truth(path)
    theirs_ = theirs(t)
    ours_ = {_norm(v["tf_name"]): v["status"] for v in report["variables"]}
    assert ours_ == theirs_
    assert {v["name"]: v["status"] for v in report["variables"] if "aux" in v["name"]} == {
        'model.get_layer("aux").kernel': "disconnected",
        'model.get_layer("aux").bias': "disconnected",
    }
    (p,) = report["problems"]
    assert p["kind"] == "not_read" and p["op_type"] == "BiasAdd" and "aux" in p["op"]
    # the cause is compile()'s loss, which leaves the output out: named, at that line
    assert p["source"]["line"] == line_of(path, ".compile(")
    assert "output 'aux' has no loss in compile()" in p["message"] and "'aux'" in p["hint"]
