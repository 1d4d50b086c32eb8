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
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(EXAMPLES / "program_custom_loop_healthy.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    counts, verdict = done.stdout.strip().splitlines()[-2:]
    tapes, holding, watched = counts.split(" ", 2)
    assert int(tapes) >= 1  # the program's tape, parked in its stopped thread
    assert int(holding) == 0, counts
    assert "0" not in watched.strip("[]").split(", ")  # what it watched is still known
    assert verdict.startswith("True") and "disconnected" not in verdict


FIT = r'''
import numpy as np
import tensorflow as tf


class Probe(tf.keras.layers.Layer):
    """Says how each call runs: eagerly (every activation kept on a tape) or in a trace."""

    def call(self, x):
        print("eager" if tf.executing_eagerly() else "traced", flush=True)
        return x


model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8), Probe(),
                             tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
print("fit", flush=True)
model.fit(np.ones((8, 4), np.float32), np.ones((8, 1), np.float32), batch_size=8, epochs=1, verbose=0)
'''


def test_a_fit_step_is_reached_in_a_trace_as_keras_runs_it(tmp_path) -> None:
    """``fit`` on a built model: the step tfviz diagnoses is reached in a trace of train_step, as
    Keras runs it (TensorFlow's own run of the program is the oracle), never by an eager forward
    pass, which would keep every activation of the model at once."""
    import json

    from tests.test_commands import TFVIZ

    program = tmp_path / "fit_probe.py"
    program.write_text(FIT)
    plain = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr[-3000:]
    theirs = plain.stdout.split("fit\n", 1)[1].split()
    assert theirs and set(theirs) == {"traced"}  # Keras' fit runs the step as a graph
    done = subprocess.run(
        [str(TFVIZ), "check", str(program), "--json"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    ours = report["stdout"].split("fit\n", 1)[1].split()
    assert ours and "eager" not in ours, report["stdout"]
    assert report["target"].startswith("Model.fit → Sequential.train_step, epoch 1, batch 1")
