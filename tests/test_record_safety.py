"""``--until`` and ``--record`` as a hostile or unlucky user meets them, through the installed
``tfviz``: the record never writes through a link, a bad record path fails before the program
runs, and watching a program that computes no gradient fails as checking it does."""

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
