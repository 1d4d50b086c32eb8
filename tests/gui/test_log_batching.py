"""The script's output reaches the window in few, bounded, ordered, timely messages,
and the Log panel keeps the tail of a flood without per-line work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from conftest import ROOT

#: 2 MB in 20,000 lines, one stderr line in the middle, then a line and a pause.
FLOOD = """\
import sys, time
import tensorflow as tf

for i in range(10000):
    print(f"out {i:05d} " + "x" * 90)
print("to stderr", file=sys.stderr)
for i in range(10000, 20000):
    print(f"out {i:05d} " + "x" * 90)
print(f"printed at {time.time()!r}")
time.sleep(1.5)
print("after the pause")
w = tf.Variable(1.0, name="w")


def loss():
    return w * 3.0
"""


def test_worker_batches_output_in_order_in_bounded_timely_messages(tmp_path):
    script = tmp_path / "flood.py"
    script.write_text(FLOOD)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfviz.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    proc.stdin.write(
        (
            json.dumps({"cmd": "analyze", "script": str(script), "target": None, "result_output": "tail"})
            + "\n"
        ).encode()
    )
    proc.stdin.flush()
    messages, sizes, arrived = [], [], {}
    for raw in proc.stdout:
        msg = json.loads(raw)
        messages.append(msg)
        if msg["type"] == "log":
            sizes.append(len(raw) - 1)
            if "printed at" in msg["text"]:
                arrived["at"] = time.time()
                arrived["printed"] = float(msg["text"].split("printed at ")[1].split()[0])
        if msg["type"] in ("result", "error"):
            break
    proc.stdin.close()
    proc.wait(timeout=30)
    assert messages[-1]["type"] == "result", messages[-1]
    logs = [m for m in messages if m["type"] == "log"]
    out = "".join(m["text"] for m in logs if m["stream"] == "stdout")
    expected = "".join(f"out {i:05d} " + "x" * 90 + "\n" for i in range(20000))
    assert out.startswith(expected) and out.endswith("after the pause\n")  # nothing lost, in order
    # the stderr line sits between the two halves
    streams = [(m["stream"], m["text"]) for m in logs]
    err_at = next(i for i, (s, t) in enumerate(streams) if s == "stderr")
    assert "out 09999" in "".join(t for s, t in streams[:err_at])
    assert "out 10000" in "".join(t for s, t in streams[err_at + 1 :])
    # ~2 MB in messages of at most 64 KB: a few dozen, not 40,000
    assert max(sizes) <= 64 * 1024
    assert len(logs) < 120, len(logs)
    # live: the line printed before the pause arrived long before the pause ended
    assert arrived["at"] - arrived["printed"] < 0.5, arrived
    # the result does not repeat the 2 MB the log messages carried
    assert len(messages[-1]["report"]["stdout"]) <= 64 * 1024


def test_log_panel_keeps_the_tail_of_a_flood_in_order(qtbot):
    from app.panels.docks import LogPanel

    panel = LogPanel()
    qtbot.addWidget(panel)
    chunk = "".join(f"{i:07d} {'x' * 91}\n" for i in range(650))
    panel.note("running flood.py")
    for k in range(60):  # ~39,000 lines
        panel.append_text("stderr" if k == 59 else "stdout", chunk.replace("0000", f"{k:04d}", 1))
    panel.note("diagnosed")
    text = panel.toPlainText()
    lines = text.splitlines()
    assert len(lines) <= LogPanel.MAX_LINES + 2
    assert lines[0].startswith("── earlier output not kept")
    assert lines[-1] == "── diagnosed"
    assert lines[-2] == f"0000649 {'x' * 91}"
    assert "0059000" in text  # the last chunk, whose first line was marked


def test_log_panel_shows_text_soon_and_follows_the_end(qtbot):
    from app.panels.docks import LogPanel

    panel = LogPanel()
    qtbot.addWidget(panel)
    panel.resize(400, 200)
    panel.show()
    panel.append_text("stdout", "".join(f"line {i}\n" for i in range(500)))
    qtbot.waitUntil(lambda: panel.document().blockCount() > 400, timeout=1000)  # drawn by its timer
    bar = panel.verticalScrollBar()
    assert bar.value() == bar.maximum()
    bar.setValue(0)  # the reader scrolls up: new text does not pull the view down
    panel.append_text("stdout", "one more\n")
    qtbot.waitUntil(lambda: "one more" in panel.document().lastBlock().previous().text(), timeout=1000)
    assert bar.value() == 0
