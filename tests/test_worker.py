"""The worker speaks JSON lines: ready, progress, log, then result or error."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import EXAMPLES


def ask(request: dict) -> list[dict]:
    r = subprocess.run(
        [sys.executable, "-m", "tfviz.worker"],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_worker_analyses_and_streams_progress(tmp_path):
    script = tmp_path / "talk.py"
    script.write_text(
        (EXAMPLES / "kind_integer.py").read_text() + "\nprint('loaded the data')\n"
    )
    msgs = ask({"cmd": "analyze", "script": str(script), "target": None})
    types = [m["type"] for m in msgs]
    assert types[0] == "ready" and types[-1] == "result"
    assert "progress" in types
    assert {"type": "log", "stream": "stdout", "text": "loaded the data"} in msgs
    from tfviz.report import Report

    report = Report.from_dict(msgs[-1]["report"])
    assert {v.name: v.kind for v in report.variables} == {"scale": "integer", "bias": None}
    assert len(report.graph.ops) > 5


def test_worker_reports_errors_as_data(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import tensorflow as tf\nx = (\n")
    msgs = ask({"cmd": "analyze", "script": str(script)})
    assert msgs[-1]["type"] == "error"
    err = msgs[-1]["error"]
    assert err["file"] == str(script) and err["line"] and "syntax error" in err["message"]
