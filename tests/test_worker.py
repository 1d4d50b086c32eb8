"""The worker speaks JSON lines: ready, progress, log, then result or error."""

from __future__ import annotations

import json
import os
import subprocess

from tests.conftest import EXAMPLES
from tfviz.worker.launch import worker_command, worker_environment


def ask(request: dict) -> list[dict]:
    r = subprocess.run(
        worker_command(),
        env=worker_environment(),
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_worker_analyses_and_streams_progress(tmp_path):
    script = tmp_path / "talk.py"
    script.write_text((EXAMPLES / "kind_integer.py").read_text() + "\nprint('loaded the data')\n")
    msgs = ask({"cmd": "analyze", "script": str(script), "target": None})
    types = [m["type"] for m in msgs]
    assert types[0] == "ready" and types[-1] == "result"
    assert "progress" in types
    out = "".join(m["text"] for m in msgs if m["type"] == "log" and m["stream"] == "stdout")
    assert "loaded the data\n" in out  # batched: lines may share a message
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


STEPPING_PROGRAM = """\
import sys

import tensorflow as tf

w = tf.Variable(1.0, name="w")


def loss():
    return w * 2.0


if __name__ == "__main__":
    lr = float(sys.argv[sys.argv.index("--lr") + 1])
    for i in range(3):
        with tf.GradientTape() as tape:
            value = tf.square(w - 3.0)
        (g,) = tape.gradient(value, [w])
        w.assign_sub(lr * g)
        print(f"step {i + 1} done")
"""


def test_worker_passes_run_args_and_step_to_the_program(tmp_path):
    """run=True runs the program although it defines loss(); its argv is
    [SCRIPT, *args]; step 2 is diagnosed (w=2 after one step at lr 0.25:
    |d/dw (w-3)^2| = 2, not 4 as at step 1 nor 2*1 as loss() would give)."""
    script = tmp_path / "stepping.py"
    script.write_text(STEPPING_PROGRAM)
    msgs = ask(
        {
            "cmd": "analyze",
            "script": str(script),
            "target": None,
            "run": True,
            "args": ["--lr", "0.25"],
            "step": 2,
        }
    )
    assert msgs[-1]["type"] == "result", msgs[-1]
    report = msgs[-1]["report"]
    assert report["mode"] == "program"
    assert "tape.gradient" in report["target"]
    (var,) = report["variables"]
    assert abs(var["grad_norm"] - 2.0) < 1e-4
    logged = "".join(m["text"] for m in msgs if m["type"] == "log")
    assert "step 1 done" in logged and "step 2 done" not in logged  # stopped before step 2's update


def test_worker_rejects_malformed_program_options(tmp_path):
    script = tmp_path / "x.py"
    script.write_text("print('never run')\n")
    msgs = ask({"cmd": "analyze", "script": str(script), "args": "--lr 0.1"})
    assert msgs[-1]["type"] == "error"
    assert '"args" must be a list of strings' in msgs[-1]["error"]["message"]
    assert not any(m["type"] == "log" for m in msgs)


def test_a_blank_request_line_is_answered_as_an_error_not_a_silent_exit():
    r = subprocess.run(
        worker_command(), env=worker_environment(), input="  \n", capture_output=True, text=True, timeout=300
    )
    msgs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [m["type"] for m in msgs] == ["ready", "error"]
    assert "empty line" in msgs[-1]["error"]["message"]
    assert r.returncode == 2
    # stdin closed with no request at all is no request: the worker just ends
    r = subprocess.run(
        worker_command(), env=worker_environment(), input="", capture_output=True, text=True, timeout=300
    )
    assert [json.loads(line)["type"] for line in r.stdout.splitlines()] == ["ready"] and r.returncode == 0


def test_a_printed_request_is_answered_with_the_commands_text_and_the_graph_file(tmp_path):
    """``tfviz check`` asks the worker to print the report and write ``--graph`` where the
    report is: the text is what the command would print of the whole report (paths
    relative to the command's folder, not the script's), the file is the whole report,
    and the answer carries the graph's counts, not the graph."""
    from tfviz.analysisfile import load_analysis
    from tfviz.report import Report
    from tfviz.textreport import render

    (tmp_path / "work").mkdir()
    script = tmp_path / "work" / "kind_stop_gradient.py"
    script.write_text((EXAMPLES / "kind_stop_gradient.py").read_text())
    whole = ask({"cmd": "analyze", "script": str(script)})[-1]
    assert whole["type"] == "result" and len(whole["report"]["graph"]["ops"]) > 5
    report = Report.from_dict(whole["report"])
    graph = tmp_path / "g.json"
    asked = {"format": "text", "color": False, "cwd": str(tmp_path), "graph": str(graph)}
    answer = ask({"cmd": "analyze", "script": str(script), "printed": asked})[-1]
    assert answer["type"] == "result", answer
    assert answer["report"]["graph"] == report.graph.counts() and answer["report"]["ok"] is False
    assert "graph_error" not in answer
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert answer["printed"] == render(report)
    finally:
        os.chdir(here)
    assert "work/kind_stop_gradient.py:" in answer["printed"]  # a problem's line, as the user is
    saved = load_analysis(graph)
    assert [(o.name, o.status) for o in saved.graph.ops] == [(o.name, o.status) for o in report.graph.ops]
    assert [(v.name, v.kind) for v in saved.variables] == [(v.name, v.kind) for v in report.variables]

    asked = {"format": "json", "cwd": str(tmp_path), "graph": str(tmp_path / "no" / "g.json")}
    answer = ask({"cmd": "analyze", "script": str(script), "printed": asked})[-1]
    printed = json.loads(answer["printed"])
    expected = {"schema_version": 1, **json.loads(report.to_json(full_graph=False))}
    for doc in (printed, expected):
        doc.pop("timings_s")
    assert printed == expected
    assert "does not exist" in answer["graph_error"]


def test_a_workers_analysis_puts_the_loaded_script_out_of_the_collectors_sight():
    """The worker's process ends with its analysis: what the script made (a model's every
    layer) is frozen once loaded, so full collections during the analysis skip it. An
    analysis in a process that goes on (a test, the Jacobian command) freezes nothing."""
    import sys

    code = (
        "import gc, sys\n"
        "from tfviz.analysis.diagnose import analysis\n"
        "before = gc.get_freeze_count()\n"
        "done = analysis(sys.argv[1], freeze=sys.argv[2] == 'yes')\n"
        "print(gc.get_freeze_count() - before)\n"
    )
    frozen = {}
    for freeze in ("yes", "no"):
        r = subprocess.run(
            [sys.executable, "-c", code, str(EXAMPLES / "kind_stop_gradient.py"), freeze],
            env=worker_environment(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        frozen[freeze] = int(r.stdout.split()[-1])
    assert frozen["no"] == 0 and frozen["yes"] > 1000
