"""The program cannot tell it runs under tfviz: it gets real streams, TensorFlow's own
gradients and its Keras state as under ``python``, checked through the installed ``tfviz``
against the same program run by ``python`` and against TensorFlow's answer at its step."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from tests.conftest import ROOT, check_json
from tests.test_program_mode import _norm, truth

PROGRAMS = ROOT / "tests" / "programs" / "fidelity"


def test_the_program_writes_through_real_streams_and_logs_tensorflows_gradient(tmp_path):
    program = PROGRAMS / "streams.py"
    plain = subprocess.run(
        [sys.executable, str(program), str(tmp_path / "python.log")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert plain.returncode == 0, plain.stderr[-2000:]
    rc, report = check_json(program, "--", str(tmp_path / "tfviz.log"))
    assert rc == 0, report
    # each of these lines raised under the old capture: reconfigure, .buffer, .fileno(), faulthandler
    for text in ("épochs: 3\n", "raw bytes\n", "from a child\n", "stdout fd 1, stderr fd 2\n"):
        assert text in report["stdout"] and text in plain.stdout, text
    assert "to stderr\n" in report["stderr"] and "to stderr\n" in plain.stderr
    # what the program printed arrives in the order it printed it
    out = report["stdout"]
    assert out.index("épochs") < out.index("raw bytes") < out.index("from a child") < out.index("stdout fd")
    # the step's gradient is TensorFlow's (2.0), not a stand-in: the file the program wrote
    # before its update holds what python's run wrote at the same step
    logged = (tmp_path / "tfviz.log").read_text().splitlines()
    assert logged == (tmp_path / "python.log").read_text().splitlines()[:1] == ["step 0: 2.0"]


@pytest.mark.parametrize("program", ["keras_state_fit.py", "keras_state_loop.py"])
@pytest.mark.parametrize("step", [1, 3])
def test_keras_state_made_by_the_steps_first_trace_is_the_programs(program, step):
    """Keras' global seed generator is first made inside the step's trace: the replay draws
    the same noise from it, so every gradient is the one TensorFlow computes at that step."""
    path = PROGRAMS / program
    rc, report = check_json(path, "--step", str(step))
    assert rc == 0, report.get("error")
    t = truth(path, step=step)
    theirs = {_norm(s["name"]): s for s in t["sources"]}
    ours = {_norm(v["tf_name"]): v for v in report["variables"]}
    assert ours.keys() == theirs.keys()
    for name, v in ours.items():
        assert v["status"] == theirs[name]["status"] == "connected", name
        assert math.isclose(v["grad_norm"], theirs[name]["norm"], rel_tol=1e-4), name


def test_the_programs_warnings_are_pythons_and_say_where_python_says(tmp_path):
    """Keras warns that ``shuffle=True`` does nothing for a tf.data.Dataset, from its epoch
    iterator; under tfviz the program gets that warning as under ``python``, from the same
    line, and nothing of tfviz's own in its stderr."""
    program = PROGRAMS / "keras_warning_fit.py"
    plain = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert plain.returncode == 0, plain.stderr[-2000:]
    rc, report = check_json(program)
    assert rc == 0, report

    def warned(stderr: str) -> list[str]:
        return [line for line in stderr.splitlines() if "Warning:" in line]

    theirs = warned(plain.stderr)
    assert len(theirs) == 1 and "epoch_iterator.py" in theirs[0] and "shuffle=True" in theirs[0], theirs
    assert warned(report["stderr"]) == theirs
    assert "tfviz" not in report["stderr"]


@pytest.mark.parametrize("eager", [False, True], ids=["compiled", "eager"])
def test_a_nan_in_the_input_reaches_the_variables_tensorflow_says_it_reaches(tmp_path, eager):
    """Compiled, Grappler's fused ReLU stops the NaN at the first layer: TensorFlow gives the
    first kernel alone a NaN gradient. Eagerly, every gradient is NaN. tfviz says what the
    program's own step computed, norm for norm."""
    program = PROGRAMS / "nan_input_step.py"
    log, flags = tmp_path / "norms.txt", ["--eager"] if eager else []
    plain = subprocess.run(
        [sys.executable, str(program), str(log), *flags], capture_output=True, text=True, timeout=300
    )
    assert plain.returncode == 0, plain.stderr[-2000:]
    theirs = [float(n) for n in log.read_text().splitlines()[0].split()]  # step 1
    rc, report = check_json(program, "--", str(tmp_path / "tfviz.txt"), *flags)
    assert rc == 1, report
    assert len(theirs) == 4 and math.isnan(theirs[0])
    assert all(math.isnan(n) for n in theirs) == eager
    ours = report["variables"]
    assert [v["kind"] == "nan" for v in ours] == [math.isnan(n) for n in theirs]
    for v, n in zip(ours, theirs):
        if not math.isnan(n):
            assert math.isclose(v["grad_norm"], n, rel_tol=1e-5), v["name"]
    problem = next(p for p in report["problems"] if p["kind"] == "nan")
    assert "the step's input x" in problem["message"]
    assert set(problem["variables"]) == {v["name"] for v in ours if v["kind"] == "nan"}
