"""The step is the end of the program: nothing of it runs afterwards.

tfviz stops a program at its step without unwinding it, so neither its
``except``/``finally`` blocks nor the lines after its loop run, whatever it
does with exceptions; and no update of that step is applied.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, default_sigint

PROGRAMS = ROOT / "tests" / "programs" / "unwinding"
TFVIZ = Path(sys.executable).with_name("tfviz")


def _check(program: str, out: Path, step: int = 1) -> tuple[int, dict]:
    done = subprocess.run(
        [str(TFVIZ), "check", str(PROGRAMS / program), "--json", "--step", str(step), "--", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, json.loads(done.stdout)


@pytest.mark.parametrize("program", ["catches_everything.py", "retries_forever.py"])
def test_a_program_that_catches_everything_ends_at_its_step(program, tmp_path):
    rc, report = _check(program, tmp_path)
    assert rc == 0, report
    assert report["ok"] and [v["status"] for v in report["variables"]] == ["connected"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no except, finally, retry or later line ran


def test_a_compat_v1_optimizer_does_not_apply_the_diagnosed_step(tmp_path):
    rc, report = _check("v1_momentum.py", tmp_path, step=2)
    assert rc == 0, report
    assert "call 2" in report["target"] or "tape.gradient" in report["target"]
    # step 1's update ran and wrote its file; step 2's update never ran, nor anything after it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["after_update_1.txt"]


def test_the_variables_keep_their_values_from_before_the_steps_update(tmp_path):
    import numpy as np

    from tfviz.program.launch import run_program
    from tfviz.script.streams import Capture

    captured = run_program(str(PROGRAMS / "v1_momentum.py"), [str(tmp_path)], 2, Capture())
    ns = captured.namespace
    assert len(ns["before_update"]) == 2
    np.testing.assert_array_equal(ns["w"].numpy(), ns["before_update"][-1])  # momentum did not move w
    assert not np.array_equal(ns["before_update"][0], ns["before_update"][1])  # step 1's update did


def _alive_in_group(group: int) -> list[str]:
    """The processes of a group still running (a zombie has ended; init reaps it)."""
    ps = subprocess.run(["ps", "-eo", "pid=,pgid=,stat=,args="], capture_output=True, text=True).stdout
    return [
        line
        for line in ps.splitlines()
        if int(line.split()[1]) == group and not line.split()[2].startswith("Z")
    ]


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    import time

    for _ in range(600):
        if path.exists() and path.read_text().strip():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError(f"{path} never appeared")


def test_no_process_the_program_started_outlives_tfviz_check(tmp_path):
    rc, report = _check("starts_helpers.py", tmp_path)
    assert rc == 0, report
    pids = [int(p) for p in (tmp_path / "pids.txt").read_text().split()]
    assert len(pids) == 3
    groups = {g for g in (_group(p) for p in pids) if g is not None}
    assert not [line for g in groups for line in _alive_in_group(g)]
    assert not [p for p in pids if _running(p)]


def _group(pid: int) -> int | None:
    import os

    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_ending_tfviz_check_ends_everything_the_program_started(signame, tmp_path):
    import signal

    proc = subprocess.Popen(
        [str(TFVIZ), "check", str(PROGRAMS / "starts_helpers.py"), "--json", "--", str(tmp_path), "--hang"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
        preexec_fn=default_sigint,
    )
    pids_file = tmp_path / "pids.txt"
    try:
        _wait_for(pids_file, proc)
        pids = [int(p) for p in pids_file.read_text().split()]
        group = _group(pids[0])
        assert group is not None and group != proc.pid  # the worker leads a group of its own
        proc.send_signal(getattr(signal, signame))
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    # SIGKILL: the command cannot clean up, its worker notices it is gone and ends the group
    # as a shell reports each: 128 + the signal's number (SIGINT 130, SIGTERM 143)
    assert proc.returncode == {"SIGKILL": -9, "SIGINT": 130, "SIGTERM": 143}[signame]
    import time

    for _ in range(100):  # SIGKILL is delivered at once; reaping takes a moment
        if not _alive_in_group(group) and not [p for p in pids if _running(p)]:
            break
        time.sleep(0.1)
    assert not _alive_in_group(group)
    assert not [p for p in pids if _running(p)]
