"""One worker protocol: both clients start the same command with the same environment, and
every line a real worker writes, over an analysis, a watched run and a kept session, is
one of the typed answers of :mod:`tfviz.worker.messages`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, ROOT
from tfviz.worker.client import WorkerClient
from tfviz.worker.launch import worker_command, worker_environment
from tfviz.worker.messages import TYPES, Failure, JacobianAnswer, Names, Result, decode, encode


def _lines(request: list[dict], timeout: int = 300) -> list[dict]:
    text = "".join(json.dumps(r) + "\n" for r in request)
    done = subprocess.run(
        worker_command(),
        input=text,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=worker_environment(),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_every_line_of_a_watched_run_and_a_kept_session_is_a_typed_answer() -> None:
    lines = _lines(
        [
            {
                "cmd": "analyze",
                "script": str(EXAMPLES / "program_custom_loop_healthy.py"),
                "run": True,
                "until": ["nan"],
                "step": 3,
                "live": True,
            },
        ]
    ) + _lines(
        [
            {"cmd": "analyze", "script": str(EXAMPLES / "seed3_chain_rule.py"), "keep": True},
            {"cmd": "names", "id": 1},
            {"cmd": "jacobian", "id": 2, "of": "target", "wrt": "w"},
            {"cmd": "jacobian", "id": 3, "of": "target", "wrt": "no_such_variable"},
        ]
    )
    kinds = [m["type"] for m in lines]
    wanted = {"ready", "progress", "steps", "result", "names", "jacobian", "jacobian_error"}
    assert wanted <= set(kinds), kinds
    undecoded = [m for m in lines if m["type"] != "jacobian_piece" and decode(m) is None]
    assert not undecoded, undecoded[:2]
    # and each decodes to the answer it is, which writes back the very line
    for m in lines:
        if m["type"] in TYPES:
            assert encode(decode(m)) == m  # type: ignore[arg-type]


@pytest.mark.parametrize("script, answer", [("kind_integer.py", Result), ("program_no_gradient.py", Failure)])
def test_the_blocking_client_runs_one_analysis_and_the_worker_ends(script: str, answer: type) -> None:
    client = WorkerClient()
    got = client.run({"cmd": "analyze", "script": str(EXAMPLES / script), "target": None})
    assert isinstance(got, answer), got
    assert client.proc.poll() is not None  # the worker is gone
    assert client.proc.args == worker_command()


def test_a_kept_session_answers_in_order_and_a_dead_worker_is_a_failure() -> None:
    client = WorkerClient()
    try:
        assert isinstance(
            client.analyze(
                {
                    "cmd": "analyze",
                    "script": str(EXAMPLES / "seed3_chain_rule.py"),
                    "target": None,
                    "keep": True,
                }
            ),
            Result,
        )
        names = client.request({"cmd": "names", "id": "n"}, frozenset({Names.type}))
        assert isinstance(names, Names) and names.id == "n" and names.names
        wrt = names.names[1]  # after "target": the first variable
        j = client.request(
            {"cmd": "jacobian", "id": 7, "of": "target", "wrt": wrt},
            frozenset({JacobianAnswer.type, "jacobian_error"}),
        )
        assert isinstance(j, JacobianAnswer) and j.id == 7 and j.result is not None
        client.proc.kill()
        client.proc.wait()
        gone = client.request({"cmd": "names", "id": 9}, frozenset({Names.type}))
        assert isinstance(gone, Failure) and "signal SIGKILL" in gone.error["message"]
    finally:
        client.close()


#: The window's worker, as a fresh process with a QApplication makes it: a test process that
#: has run in-process analyses holds their parked program threads, and a QApplication made
#: there leaves widgets for the module's collection on the GUI thread, among those threads
WINDOW_WORKER = """
import json, os, sys
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from PySide6.QtWidgets import QApplication
app = QApplication([])
from app.worker_client import Worker
from tfviz.worker.launch import worker_command, worker_environment
w = Worker()
try:
    env = dict(line.split("=", 1) for line in w.proc.processEnvironment().toStringList())
    expected = worker_environment()
    expected.pop("QT_QPA_PLATFORM", None)
    said = {
        "command": [w.proc.program(), *w.proc.arguments()],
        "expected_command": worker_command(),
        "env_differs": sorted(k for k in set(env) | set(expected) if env.get(k) != expected.get(k)),
    }
finally:
    w.kill()
    w.proc.waitForFinished(5000)
print(json.dumps(said))
"""


def test_the_window_starts_the_same_worker() -> None:
    pytest.importorskip("PySide6")
    done = subprocess.run(
        [sys.executable, "-c", WINDOW_WORKER], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["command"] == said["expected_command"]
    assert said["env_differs"] == []
