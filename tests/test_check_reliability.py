"""``tfviz check`` as a hostile or unlucky user meets it, through the installed command: the
record never writes through a link, a bad record path fails before the program runs, watching
a program that computes no gradient fails as checking it does, and a signal is said as itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLES

TFVIZ = Path(sys.executable).with_name("tfviz")
PROGRAM = EXAMPLES / "train_cond_branch.py"


def _tfviz(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TFVIZ), "check", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def test_a_link_planted_at_the_records_old_temporary_name_is_never_written_through(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    planted = tmp_path / ".r.csv.recording.tfviz-tmp"  # the name tfviz once wrote to
    planted.symlink_to(victim)
    done = _tfviz(str(PROGRAM), "--until", "none", "--record", "r.csv", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert victim.read_text() == "precious\n" and planted.is_symlink()
    record = tmp_path / "r.csv"
    assert not record.is_symlink() and record.read_text().startswith("# written by tfviz")
    # no temporary of this run is left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([planted.name, "r.csv", "victim.txt"])


def test_a_record_that_cannot_be_written_fails_before_the_program_runs(tmp_path):
    done = _tfviz(str(PROGRAM), "--until", "none", "--record", "missing/r.csv", cwd=tmp_path)
    assert done.returncode == 2
    assert "--record missing/r.csv" in done.stderr and "does not exist" in done.stderr
    assert "step 20" not in done.stderr  # the program's own output: it never ran
    os.mkfifo(tmp_path / "pipe.csv")
    done = _tfviz(str(PROGRAM), "--until", "none", "--record", "pipe.csv", cwd=tmp_path)
    assert done.returncode == 2 and "FIFO" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.csv"]


def test_watching_a_program_that_computes_no_gradient_fails_as_checking_it_does(tmp_path):
    program = tmp_path / "nograd.py"
    program.write_text('import tensorflow as tf\n\nprint("no training here")\n')
    (tmp_path / "r.csv").write_text("# written by tfviz 0.1.0\nstale\n")  # an earlier run's
    plain = _tfviz(str(program), cwd=tmp_path)
    watched = _tfviz(str(program), "--until", "nan", "--record", "r.csv", cwd=tmp_path)
    assert plain.returncode == watched.returncode == 2
    assert "ran to the end without computing a gradient" in watched.stderr
    assert watched.stderr.splitlines()[0] == plain.stderr.splitlines()[0]
    assert "r.csv" not in watched.stderr and "r.csv" not in watched.stdout  # never named
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nograd.py", "r.csv"]  # no temporary left


def test_sighup_and_sigterm_are_said_and_exit_as_a_shell_reports_them(tmp_path):
    """SIGHUP ends a check as Ctrl-C does, with its own words and 128 + 1."""
    import signal
    import time

    from tests.conftest import default_sigint

    program = tmp_path / "endless.py"
    program.write_text(
        "import tensorflow as tf\n\nw = tf.Variable(1.0)\nprint('started', flush=True)\n"
        "while True:\n    with tf.GradientTape() as tape:\n        loss = w * 2.0\n"
        "    w.assign_sub(0.0 * tape.gradient(loss, w))\n"
    )
    proc = subprocess.Popen(
        [str(TFVIZ), "check", str(program), "--until", "nan"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=default_sigint,
    )
    time.sleep(4.0)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 129 and "interrupted (SIGHUP)" in err, err


def test_a_notebook_without_cell_ids_says_nothing_of_nbformat(tmp_path):
    import json

    notebook = tmp_path / "old.ipynb"
    cell = "import tensorflow as tf\nw = tf.Variable(2.0)\n\n\ndef loss():\n    return w * w\n"
    notebook.write_text(
        json.dumps(
            {
                "nbformat": 4,
                "nbformat_minor": 5,  # 4.5 has cell ids; this file was saved without them
                "metadata": {},
                "cells": [
                    {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [], "source": cell}
                ],
            }
        )
    )
    done = _tfviz(str(notebook), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "MissingIDFieldWarning" not in done.stderr and "nbformat" not in done.stderr


def test_the_program_sees_the_callers_temporary_folder(tmp_path):
    """Forked from a warm server or started anew, the worker has the caller's environment
    whole: tempfile's folder is the caller's TMPDIR, not the server's cached one."""
    import json

    folder = tmp_path / "my-tmp"
    folder.mkdir()
    program = tmp_path / "prints_tmp.py"
    program.write_text(
        "import tempfile\n\nimport tensorflow as tf\n\nprint(tempfile.gettempdir())\n"
        "w = tf.Variable(1.0)\nwith tf.GradientTape() as tape:\n    loss = w * 3.0\n"
        "tape.gradient(loss, w)\n"
    )
    command = [str(TFVIZ), "check", str(program), "--json"]
    env = {**os.environ, "TMPDIR": str(folder)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stdout"].strip() == str(folder)


def test_a_helper_in_a_session_of_its_own_is_said_to_be_left_running(tmp_path):
    """tfviz ends the program's process group; a helper started in a session of its own
    leaves it, so the report says that one is still running, with its pid."""
    import json
    import signal

    program = tmp_path / "helper.py"
    program.write_text(
        "import subprocess\n\nimport tensorflow as tf\n\n"
        "helper = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
        "print(helper.pid, flush=True)\n"
        "w = tf.Variable(1.0)\nwith tf.GradientTape() as tape:\n    loss = w * 3.0\n"
        "tape.gradient(loss, w)\n"
    )
    done = _tfviz(str(program), "--json", cwd=tmp_path)
    report = json.loads(done.stdout)
    pid = int(report["stdout"].split()[0])
    try:
        assert done.returncode == 0, done.stderr
        (note,) = [n for n in report["notes"] if "session of its own" in n]
        assert f"process {pid} (sleep)" in note and "still running" in note
        os.kill(pid, 0)  # it is indeed still running
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
