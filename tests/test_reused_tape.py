"""A step that asks a tape that is not persistent for gradients a second time.

TensorFlow raises RuntimeError at the second call, eagerly and while it traces a
``tf.function``, so the program stops before its optimizer trains anything. tfviz stopped
the program at that call as the step's end, said "gradients flow" and listed the second
call's model as a separate one. The oracle is the program run as Python runs it.
"""

from __future__ import annotations

import json
import runpy

import pytest

from tests.conftest import ROOT, line_of
from tests.test_commands import tfviz
from tfviz.program.training import REUSED_TAPE

TAPES = ROOT / "tests" / "programs" / "tapes"


@pytest.mark.parametrize("name", ["asked_twice.py", "asked_twice_function.py"])
def test_a_second_call_on_a_tape_that_is_not_persistent_is_an_error_at_itsline_of(name, tmp_path):
    path = TAPES / name
    with pytest.raises(RuntimeError, match=REUSED_TAPE):
        runpy.run_path(str(path))
    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    (p,) = report["problems"]
    assert p["kind"] == "not_trained" and p["severity"] == "error"
    assert p["source"]["line"] == line_of(path, "g2 = tape.gradient(")
    assert f"the tape opened at {path.name}:{line_of(path, 'with tf.GradientTape()')}" in p["message"]
    assert REUSED_TAPE in p["message"] and "persistent=True" in p["hint"]
    assert p["variables"] == ["dec.layers[0].kernel", "dec.layers[0].bias"]


def test_a_persistent_tape_asked_twice_is_no_problem(tmp_path):
    path = TAPES / "asked_twice_persistent.py"
    runpy.run_path(str(path))  # TensorFlow answers both calls
    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["problems"] == []


def test_a_gradient_taken_inside_another_recording_tape_says_the_training_step_is_later(tmp_path):
    """MAML's inner gradient is computation 1; the outer tape records it and differentiates
    through it in computation 2, the meta step. TensorFlow: both give w and b a gradient."""
    path = TAPES / "maml_inner_step.py"
    runpy.run_path(str(path))
    first = json.loads(tfviz("check", str(path), "--json", cwd=tmp_path).stdout)
    assert first["target"] == f"tape.gradient at maml_inner_step.py:{line_of(path, 'inner.gradient(')}"
    (note,) = [n for n in first["notes"] if "second order" in n]
    assert f"the tape opened at maml_inner_step.py:{line_of(path, 'as outer:')} records" in note
    assert "computation 1" in note and "--step" in note
    meta = tfviz("check", str(path), "--step", "2", cwd=tmp_path)
    assert meta.returncode == 0, meta.stderr
    assert f"step: tape.gradient at maml_inner_step.py:{line_of(path, 'outer.gradient(')}" in meta.stdout
    assert "second order" not in meta.stdout
