"""A loss() target's forward pass runs once: its eager call is copied into a graph as it
runs (tfviz.engine.eagerstream), and a trace is made only where the copy cannot stand for
one. The oracle is the script run as ``python`` runs it (forked from a process that has only
imported TensorFlow, as the corpus' oracles are): its own ``tape.gradient``, and how its
probe layers ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests import forkserver
from tests.conftest import ROOT

TFVIZ = Path(sys.executable).with_name("tfviz")
FIRST = ROOT / "tests" / "programs" / "first"


def _calls(probe: Path) -> list[str]:
    """How the probe layers ran, one word a call: eager or traced."""
    return probe.read_text().split() if probe.exists() else []


def _tfviz(name: str, tmp_path: Path, *extra: str) -> tuple[dict, list[str]]:
    probe = tmp_path / f"{name}.tfviz.calls"
    done = subprocess.run(
        [str(TFVIZ), "check", str(FIRST / f"{name}.py"), "--json", *extra],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TFVIZ_FIRST_PROBE": str(probe)},
    )
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout), _calls(probe)


def _python(name: str, tmp_path: Path) -> tuple[dict[str, str], list[str]]:
    probe = tmp_path / f"{name}.python.calls"
    done = forkserver.run([sys.executable, str(FIRST / f"{name}.py"), str(probe)], timeout=300, cwd=FIRST)
    assert done.returncode == 0, done.stderr
    verdicts = dict(line.split() for line in done.stdout.splitlines())
    return verdicts, _calls(probe)


def _statuses(report: dict) -> dict[str, str]:
    return {v["tf_name"].split(":")[0]: v["status"] for v in report["variables"]}


def test_a_built_models_loss_runs_once_and_is_judged_as_tape_gradient_has_it(tmp_path):
    truth, python_calls = _python("built_model", tmp_path)
    report, calls = _tfviz("built_model", tmp_path)
    assert python_calls == ["eager", "eager"]  # the probe sees the user's eager call
    assert calls == ["eager", "eager"]  # one pass of each layer: the eager call, copied, no trace
    assert _statuses(report) == truth
    assert truth["shift"] == "disconnected"
    (shift,) = [v for v in report["variables"] if v["name"] == "shift"]
    assert shift["kind"] == "integer" and not report["ok"]


def test_a_lazily_built_model_is_built_by_an_eager_call_as_the_users_first_call_builds_it(tmp_path):
    report, calls = _tfviz("lazy_model", tmp_path)
    # the first call builds it eagerly, and a second sees it built, as a training step does:
    # that one is copied, and nothing is traced
    assert calls == ["eager"] * 4
    assert [v["shape"] for v in report["variables"]] == [[4, 8], [8], [8, 1], [1]]
    assert all(v["status"] == "connected" for v in report["variables"]) and report["ok"]


def test_a_target_with_a_branch_is_called_eagerly_too_and_says_how_the_two_differ(tmp_path):
    truth, _ = _python("cond_model", tmp_path)
    report, calls = _tfviz("cond_model", tmp_path)
    assert calls.count("eager") == 1  # the eager verdict is TensorFlow's own, not the trace's
    assert truth["other"] == "disconnected"
    (other,) = [v for v in report["variables"] if v["name"] == "other"]
    assert other["kind"] == "zero" and "run eagerly, tape.gradient returns None" in other["explanation"]
    assert {k: v for k, v in _statuses(report).items() if k != "other"} == {
        k: v for k, v in truth.items() if k != "other"
    }


def test_a_variable_only_a_closure_holds_is_judged(tmp_path):
    # the script holds no name for it: the call finds it, as it reads it
    report, _ = _tfviz("hidden_variable", tmp_path, "--target", "loss")
    assert {v["name"]: v["status"] for v in report["variables"]} == {"w": "connected", "hidden": "connected"}


def test_a_frozen_copy_made_by_a_lazy_build_is_made_eagerly_as_in_the_users_run(tmp_path):
    # the copy is made by the eager build, as in the user's run: made in a graph, it would
    # pass the gradient
    truth, _ = _python("lazy_frozen_copy", tmp_path)
    report, _ = _tfviz("lazy_frozen_copy", tmp_path)
    assert truth == {"sequential/reshaped/flat": "disconnected", "temperature": "connected"}
    assert _statuses(report) == truth
    (flat,) = [v for v in report["variables"] if v["name"].endswith("flat")]
    assert flat["kind"] == "frozen_copy"


def test_a_target_that_leaves_tensorflow_is_judged_as_its_eager_call_not_as_autograph_would(tmp_path):
    """float(loss) eagerly is a Python float, and tape.gradient raises on it. Traced through
    AutoGraph it would be a cast with a gradient: no trace may stand for the eager call there."""
    truth, _ = _python("python_readout", tmp_path)
    assert truth == {"w": "AttributeError"}
    done = subprocess.run(
        [str(TFVIZ), "check", str(FIRST / "python_readout.py"), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout
    assert "returned float, not a tensor" in done.stderr and "python_readout.py:10" in done.stderr
