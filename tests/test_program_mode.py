"""Program mode: the user's program, unchanged, diagnosed at its N-th gradient step.

Every verdict is checked against what TensorFlow itself returned at that same
step: tests/program_truth.py runs the program in a separate process and only
observes TensorFlow's own gradient calls.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forkserver
from tests.conftest import EXAMPLES, ROOT, default_sigint

PROGRAMS = ROOT / "tests" / "programs"
ENTRY = PROGRAMS / "entry_points.py"
_reports: dict = {}


def analyzed(path, args=(), step=1):
    """In-process analysis, cached for the session (TensorFlow imports once).

    A program that configures devices must start TensorFlow itself, so it
    runs through ``tfviz check --json`` in a fresh process instead."""
    from tfviz.analysis.diagnose import analyze
    from tfviz.report import Report

    key = (str(path), tuple(args), step)
    if key not in _reports:
        if any(a.startswith("mirrored") for a in args):
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "tfviz.cli",
                    "check",
                    str(path),
                    "--json",
                    "--step",
                    str(step),
                    "--",
                    *args,
                ],
                capture_output=True,
                text=True,
                timeout=600,
                cwd=ROOT,
            )
            assert done.returncode in (0, 1), done.stderr[-3000:]
            _reports[key] = Report.from_dict(json.loads(done.stdout))
        else:
            _reports[key] = analyze(str(path), args=list(args), step=step)
    return _reports[key]


def truth(path, args=(), step=1, prebuild=False) -> dict:
    """TensorFlow's verdict per source at the program's step-th gradient computation."""
    cmd = [sys.executable, str(ROOT / "tests" / "program_truth.py"), str(path), "--step", str(step)]
    if prebuild:
        cmd.append("--keras-prebuild")
    if args:
        cmd += ["--", *args]
    done = forkserver.run(cmd, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _norm(name: str) -> str:
    """Keras numbers repeated layer names per process (dense_3): compare without it."""
    name = name.split(":")[0]
    return "/".join(re.sub(r"_\d+$", "", part) for part in name.split("/"))


def ours(report) -> dict[str, str]:
    out = {}
    for v in report.variables:
        status = v.kind if v.kind in ("nan", "zero") else v.status
        out[_norm(v.tf_name)] = status
    return out


def theirs(t: dict) -> dict[str, str]:
    assert t["kind"] in ("tape.gradient", "exception"), t
    return {
        _norm(s.get("expr") if s["name"] == s.get("expr") else s["name"]): s["status"] for s in t["sources"]
    }


CASES = {
    # name: (path, args, step, keras_prebuild for the truth run)
    "seed1": (EXAMPLES / "program_seed1_svd.py", (), 1, False),
    # Keras builds seed 2's model inside a trace it throws away, and the program
    # then dies "out of scope"; built eagerly first (what tfviz does), TensorFlow
    # finds the weight disconnected.
    "seed2": (EXAMPLES / "program_seed2_fit.py", (), 1, True),
    "custom_loop": (EXAMPLES / "program_custom_loop.py", (), 1, False),
    "custom_loop_healthy": (EXAMPLES / "program_custom_loop_healthy.py", (), 1, False),
    "fit_bug": (EXAMPLES / "program_fit_bug.py", (), 1, False),
    "gan_generator": (EXAMPLES / "program_gan.py", (), 1, False),
    "gan_discriminator": (EXAMPLES / "program_gan.py", (), 2, False),
    "dcgan_generator": (EXAMPLES / "dcgan_healthy.py", (), 1, False),
    "dcgan_discriminator": (EXAMPLES / "dcgan_healthy.py", (), 2, False),
    "plain_eager": (EXAMPLES / "program_plain_eager.py", (), 1, False),
    "argv": (EXAMPLES / "program_argv.py", ("--lr", "0.1"), 1, False),
    **{
        f"{api}{'_bug' if bug else ''}": (ENTRY, ("--api", api, *(["--bug"] if bug else [])), 1, False)
        for api in (
            "tape",
            "train_on_batch",
            "fit",
            "fit_data",
            "custom_train_step",
            "mirrored",
            "mirrored_fit",
        )
        for bug in (False, True)
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_program_verdicts_match_tensorflow(case):
    path, args, step, prebuild = CASES[case]
    report = analyzed(path, args, step)
    assert report.mode == "program"
    assert ours(report) == theirs(truth(path, args, step, prebuild))
    assert report.ok == all(v.status == "connected" and v.kind is None for v in report.variables)


@pytest.mark.parametrize("api", ["jacobian", "tf_gradients"])
@pytest.mark.parametrize("bug", [False, True])
def test_jacobian_and_tf_gradients_agree_with_the_same_step_by_tape_gradient(api, bug):
    extra = ["--bug"] if bug else []
    report = analyzed(ENTRY, ("--api", api, *extra))
    assert report.target.startswith({"jacobian": "tape.jacobian", "tf_gradients": "tf.gradients"}[api])
    assert ours(report) == theirs(truth(ENTRY, ("--api", "tape", *extra)))
    if bug:
        (p,) = report.problems
        assert p.kind == "stop_gradient" and "tf.stop_gradient(self.alpha)" in p.source.code


def _line_of(path, needle: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if needle in text)


def test_seed1_as_reported_names_op_line_and_every_watched_tensor():
    path = EXAMPLES / "program_seed1_svd.py"
    report = analyzed(path)
    assert report.target.startswith(
        "NotImplementedError while a GradientTape recorded at program_seed1_svd.py:"
    )
    svd = [p for p in report.problems if p.op_type == "Svd"]
    assert svd and all(p.kind == "unimplemented" for p in svd)
    assert all(p.source.line == _line_of(path, "tf.linalg.svd(tensor)") for p in svd)
    affected = set().union(*(p.variables for p in svd))
    assert affected == {*(f"upper[{i}]" for i in range(5)), *(f"lower[{i}]" for i in range(5))}


def test_seed2_as_reported_names_the_frozen_copy():
    path = EXAMPLES / "program_seed2_fit.py"
    report = analyzed(path)
    assert report.target.startswith("Model.fit → Sequential.train_step, epoch 1, batch 1")
    (p,) = [p for p in report.problems if p.kind == "frozen_copy"]
    assert "weights2" in p.message and "tf.reshape" in p.source.code


def test_seed2_verdict_is_the_kept_trace_not_the_discarded_one():
    """Run as is, Keras traces seed 2's step twice: the first trace (thrown
    away) still sees a gradient for the reshaped weight, the second (the one
    Keras keeps) does not. tfviz must report the second."""
    t = truth(EXAMPLES / "program_seed2_fit.py")
    first, kept = t["traces"][0], t["traces"][-1]
    weight = next(s["name"] for s in first["sources"] if "fc_layer" in s["name"])
    status = {s["name"]: s["status"] for s in first["sources"]}
    assert status[weight] == "tensor"
    assert {s["name"]: s["status"] for s in kept["sources"]}[weight] == "disconnected"
    assert ours(analyzed(EXAMPLES / "program_seed2_fit.py"))[_norm(weight)] == "disconnected"


def test_target_names_the_users_gradient_line():
    path = EXAMPLES / "program_custom_loop.py"
    line = _line_of(path, "tape.gradient(")
    assert analyzed(path).target == f"tape.gradient at program_custom_loop.py:{line}"


def test_step_picks_the_nth_gradient_computation():
    first = analyzed(EXAMPLES / "program_gan.py", step=1)
    second = analyzed(EXAMPLES / "program_gan.py", step=2)
    assert {v.name.split(".")[0] for v in first.variables} == {"generator"}
    assert {v.name.split(".")[0] for v in second.variables} == {"discriminator"}
    assert first.target != second.target


def test_program_without_gradient_is_a_clear_error():
    from tfviz.analysis.diagnose import analyze
    from tfviz.errors import AnalysisError

    with pytest.raises(AnalysisError) as err:
        analyze(str(EXAMPLES / "program_no_gradient.py"))
    assert "ran to the end without computing a gradient" in err.value.message
    assert "last lines of stdout" in err.value.detail


def test_program_rejecting_its_command_line_says_how_to_pass_arguments():
    from tfviz.analysis.diagnose import analyze
    from tfviz.errors import AnalysisError

    with pytest.raises(AnalysisError) as err:
        analyze(str(EXAMPLES / "program_argv.py"))
    assert "exited (status 2)" in err.value.message and "after --" in err.value.message
    assert "--lr" in err.value.detail


def test_tf1_graph_mode_is_refused_with_the_line(tmp_path):
    from tfviz.analysis.diagnose import analyze
    from tfviz.errors import AnalysisError

    script = tmp_path / "tf1.py"
    script.write_text("import tensorflow as tf\n\ntf.compat.v1.disable_eager_execution()\n")
    with pytest.raises(AnalysisError) as err:
        analyze(str(script))
    assert "graph mode" in err.value.message and err.value.line == 3


def test_main_function_is_a_program_not_a_target(tmp_path):
    from tfviz.script.scriptinfo import choose_mode, static_targets

    src = (EXAMPLES / "program_argv.py").read_text()
    assert "main" not in static_targets(src)
    assert choose_mode(src, None, False) == "program"
    assert choose_mode((EXAMPLES / "kind_integer.py").read_text(), None, False) == "target"


def test_ctrl_c_stops_a_program_that_hangs_before_its_first_step(tmp_path):
    import signal
    import time

    marker = tmp_path / "started"
    script = tmp_path / "hang.py"
    script.write_text(
        f"import pathlib, time\nimport tensorflow as tf\n"
        f"pathlib.Path({str(marker)!r}).write_text('x')\ntime.sleep(600)\n"
    )
    tfviz = Path(sys.executable).with_name("tfviz")  # as a user runs it
    proc = subprocess.Popen(
        [str(tfviz), "check", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert marker.exists(), proc.communicate()[1]
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted" in err and time.monotonic() - sent < 10


def test_cli_passes_arguments_after_double_dash():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfviz.cli",
            "check",
            str(EXAMPLES / "program_argv.py"),
            "--json",
            "--",
            "--lr",
            "0.1",
            "--epochs",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    doc = json.loads(done.stdout)
    assert doc["mode"] == "program" and doc["target"].startswith("tape.gradient at program_argv.py:")
    assert done.returncode == (0 if doc["ok"] else 1)


@pytest.mark.parametrize(
    "name,needles",
    [
        ("program_seed1_svd.py", ["Svd", "tf.linalg.svd(tensor)", "upper[0]", "lower[4]", "unimplemented"]),
        ("program_seed2_fit.py", ["frozen_copy", "weights2", "tf.reshape( weights"]),
    ],
)
def test_seed_programs_exactly_as_reported_exit_1(name, needles):
    done = subprocess.run(
        [sys.executable, "-m", "tfviz.cli", "check", str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    for needle in needles:
        assert needle in done.stdout, needle


def test_json_says_where_a_programs_time_went():
    """``timings_s`` in program mode: the worker's own start (seconds for a cold worker, near
    nothing for one forked from a warm server), the program run to its step, the step's trace, the
    probes and the verdicts; each stage a part of the command's wall time."""
    import time

    from tfviz.worker.forkserver import SERVER_VARIABLE

    tfviz = str(Path(sys.executable).with_name("tfviz"))
    program = str(EXAMPLES / "program_seed2_fit.py")
    runs = {}
    for cold in (True, False):
        env = {k: v for k, v in os.environ.items() if not (cold and k == SERVER_VARIABLE)}
        t0 = time.perf_counter()
        done = subprocess.run(
            [tfviz, "check", program, "--json"],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
            cwd=ROOT,
        )
        wall = time.perf_counter() - t0
        assert done.returncode == 1, done.stderr[-2000:]
        runs[cold] = (json.loads(done.stdout)["timings_s"], wall)
    stages, wall = runs[True]
    assert {"start", "load", "trace", "probe", "judge"} <= set(stages)
    assert stages["load"] > 0 and stages["trace"] > 0
    assert sum(v for k, v in stages.items() if k != "probes") < wall
    forked = runs[False][0]
    # a cold worker imports TensorFlow (seconds); a fork of a warm server has it already
    assert stages["start"] > 1.0 > 0.1 > forked["start"], (stages, forked)
