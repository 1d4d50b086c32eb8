"""The parked program keeps no forward pass alive: once its step is captured, the tapes in its
stopped stack drop what they recorded (every activation the backward pass would need), so the
analysis' own trace does not stack a second forward pass's memory on top of it."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import EXAMPLES

PROBE = r"""
import gc, sys
import tensorflow as tf
from tfviz.analysis.diagnose import analysis

done = analysis(sys.argv[1], None, run=True)
gc.collect()
tapes = [o for o in gc.get_objects() if isinstance(o, tf.GradientTape)]
holding = [t for t in tapes if t._tape is not None]
print(len(tapes), len(holding), [len(t.watched_variables()) for t in tapes])
print(done.report.ok, sorted(v.status for v in done.report.variables))
"""


def test_the_stopped_programs_tape_no_longer_holds_its_forward_pass() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, str(EXAMPLES / "program_custom_loop_healthy.py")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    counts, verdict = done.stdout.strip().splitlines()[-2:]
    tapes, holding, watched = counts.split(" ", 2)
    assert int(tapes) >= 1  # the program's tape, parked in its stopped thread
    assert int(holding) == 0, counts
    assert "0" not in watched.strip("[]").split(", ")  # what it watched is still known
    assert verdict.startswith("True") and "disconnected" not in verdict
