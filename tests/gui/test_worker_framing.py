"""JSON-lines framing in the GUI: split chunks, and large results decoded off-thread."""

from __future__ import annotations

import json

from app.worker_client import BIG_LINE, Worker
from tfviz.report import Report, VariableReport


class FakeProc:
    def __init__(self, real):
        self.real = real
        self.chunks: list[bytes] = []

    def readAllStandardOutput(self):  # noqa: N802 - Qt's name
        return self.chunks.pop(0) if self.chunks else b""

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_messages_split_across_chunks_and_a_big_result(qtbot):
    w = Worker()
    w.proc.kill()
    w.proc.waitForFinished(5000)
    fake = FakeProc(w.proc)
    w.proc = fake
    got: list[tuple[str, object]] = []
    w.progress.connect(lambda stage, frac: got.append(("progress", stage)))
    w.result.connect(lambda r: got.append(("result", r)))
    report = Report(
        script="s.py",
        target="loss",
        variables=[
            VariableReport(name=f"v{i}", tf_name="x" * 200, dtype="float32", shape=[1], status="connected")
            for i in range(2000)
        ],
    )
    big = json.dumps({"type": "result", "report": report.to_dict()}).encode()
    assert len(big) > BIG_LINE
    progress = json.dumps({"type": "progress", "stage": "tracing", "fraction": 0.5}).encode()
    stream = progress + b"\n" + big + b"\n"
    fake.chunks = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]
    with qtbot.waitSignal(w.result, timeout=10_000):
        for _ in range(len(fake.chunks)):
            w._on_stdout()
    assert got[0] == ("progress", "tracing")
    kind, value = got[1]
    assert kind == "result" and isinstance(value, Report) and value == report


def test_last_line_without_newline_is_read_at_exit(qtbot):
    w = Worker()
    w.proc.kill()
    w.proc.waitForFinished(5000)
    got: list[str] = []
    w.progress.connect(lambda stage, frac: got.append(stage))
    w._consume(json.dumps({"type": "progress", "stage": "tail", "fraction": 1.0}).encode())
    assert got == []
    w._consume(b"\n")
    assert got == ["tail"]
