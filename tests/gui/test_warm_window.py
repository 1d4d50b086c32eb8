"""The window keeps a warm TensorFlow process of its own (``app.main.warm_server``): run as a
user runs it, with no server named, every analysis starts as a fork of it (F5, another
script, a notebook, F5 after Esc), and
closing the window ends the server and removes its socket; a window opened while a server
is named (``tfviz serve``'s) starts none of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import EXAMPLES

from tfviz.worker.forkserver import SERVER_VARIABLE

DRIVER = r"""
import json, os, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
import app.main as main

seen = {"forked": [], "server": None}
made = main.warm_server


def warm(script):
    server = made(script)
    seen["server"] = None if server is None else {"pid": server.proc.pid, "folder": server.folder}
    return server


main.warm_server = warm
make = main.make_window
state = {"runs": 0, "worker": None}


def watch(window):
    if state.get("hold"):  # between Esc and F5: the cancelled run is not one to count
        QTimer.singleShot(50, lambda: watch(window))
        return
    analysis = window.analysis
    if analysis.worker is not None:
        state["worker"] = analysis.worker
    if not analysis.busy() and analysis.report is not None and state["worker"] is not None:
        worker = state["worker"]
        seen["forked"].append(worker._group not in (0, worker.pid))
        state["runs"] += 1
        state["worker"] = None
        step = STEPS[state["runs"] - 1] if state["runs"] <= len(STEPS) else None
        if step is None:
            window.close()
            QApplication.instance().quit()
            return
        step(window)
    QTimer.singleShot(50, lambda: watch(window))


def esc_then_f5(window):
    window.reload()
    window.cancel()  # Esc: the run in flight ends, its worker killed
    state["hold"] = True

    def f5():
        state["hold"], state["worker"] = False, None
        window.reload()

    QTimer.singleShot(200, f5)


# after the first analysis: F5, another script, a notebook, Esc then F5
STEPS = [
    lambda w: w.reload(),
    lambda w: w.open_script(sys.argv[2]),
    lambda w: w.open_script(sys.argv[3]),
    esc_then_f5,
]


def make_and_watch(*a, **k):
    window = make(*a, **k)
    QTimer.singleShot(50, lambda: watch(window))
    return window


main.make_window = make_and_watch
QTimer.singleShot(300_000, QApplication.instance().quit if QApplication.instance() else lambda: None)
code = main.run_app(sys.argv[1])
print(json.dumps(seen))
"""


def _run(env: dict[str, str]) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            DRIVER,
            str(EXAMPLES / "kind_stop_gradient.py"),
            str(EXAMPLES / "seed3_chain_rule.py"),
            str(EXAMPLES / "notebook_seed2_fit.ipynb"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_window_forks_every_analysis_from_its_own_server_and_ends_it():
    env = {k: v for k, v in os.environ.items() if k != SERVER_VARIABLE}
    env["QT_QPA_PLATFORM"] = "offscreen"
    seen = _run(env)
    assert seen["server"] is not None
    # the first analysis, F5's, another script's, a notebook's, and F5's after Esc
    assert seen["forked"] == [True] * 5, seen
    # the server ended with the window, and its socket's folder is gone
    assert not os.path.exists(f"/proc/{seen['server']['pid']}") or _zombie(seen["server"]["pid"])
    assert not os.path.exists(seen["server"]["folder"])


def test_a_named_server_is_used_and_none_is_started():
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    assert env.get(SERVER_VARIABLE)  # the test process's own (tests/conftest.py)
    seen = _run(env)
    assert seen["server"] is None and seen["forked"] == [True] * 5, seen


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return "zombie" in fh.read()
    except OSError:
        return True
