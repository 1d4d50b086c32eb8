"""Benchmark: a script that prints 50 MB, in the real window with the real worker.

The script prints 500,000 lines of 100 bytes at import, then defines a
``loss()``. A 5 ms timer records the longest gap between its ticks (an
event-loop stall) from the moment the script is opened until the result has
been drawn, as in bench_responsiveness.py, split at the result's arrival:
the stalls while the output streams in, and those while the result is drawn. For comparison, the same script
is run by plain ``python`` with its output read from a pipe (as a terminal
would), and the number of ``log`` messages the worker sent is counted.

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/bench/bench_log_flood.py [MEGABYTES]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SCRIPT = """\
import tensorflow as tf

LINE = "x" * 91
for i in range({lines}):
    print(f"{{i:07d}} {{LINE}}")
print("last line of the flood")

w = tf.Variable(2.0, name="w")


def loss():
    return w * w
"""


def plain_python(script: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=script.parent
    )
    assert proc.stdout is not None
    while proc.stdout.read(1 << 16):
        pass
    proc.wait()
    return time.perf_counter() - start


def in_window(script: Path) -> dict:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.window import MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow()
    window.resize(1400, 900)
    window.show()
    window.docks["Log"].raise_()  # the Log panel on screen, drawing as the text arrives
    deadline = time.perf_counter() + 60
    while not window.pool.spare_ready() and time.perf_counter() < deadline:
        app.processEvents()
        time.sleep(0.01)
    worker = window.pool._spare
    messages = {"log": 0, "bytes": 0}
    consume = worker._consume

    def counting(chunk: bytes) -> None:
        messages["log"] += chunk.count(b'{"type": "log"')
        messages["bytes"] += len(chunk)
        consume(chunk)

    worker._consume = counting
    gaps: list[tuple[float, float]] = []  # (when the gap ended, its length)
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append((now, now - last[0]))
        last[0] = now

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(5)
    start = last[0] = time.perf_counter()
    window.open_script(str(script))
    while window.analysis.busy() and time.perf_counter() - start < 600:
        app.processEvents()
        time.sleep(0.001)
    total = time.perf_counter() - start
    settle = time.perf_counter() + 1.0
    while time.perf_counter() < settle:
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    text = window.log.toPlainText()
    ok = window.analysis.report is not None and "last line of the flood" in text
    error = window.analysis.last_error
    window.close()
    window.pool.shutdown()
    if not ok:
        raise SystemExit(f"analysis failed or output lost: {error}")
    # While the output streams in (up to the result's arrival), and while the result is drawn.
    streaming = sorted(g for t, g in gaps if t <= window.analysis.result_at)
    drawing = sorted(g for t, g in gaps if t > window.analysis.result_at)
    return {
        "total": total,
        "stall": streaming[-1] * 1000,
        "p99": streaming[int(len(streaming) * 0.99)] * 1000,
        "result_stall": max(drawing, default=0.0) * 1000,
        "messages": messages["log"],
        "log_lines": text.count("\n"),
    }


def main() -> None:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 50.0
    lines = int(megabytes * 1e6 / 100)
    with tempfile.TemporaryDirectory(prefix="tfviz-flood-") as tmp:
        script = Path(tmp) / "flood.py"
        script.write_text(SCRIPT.format(lines=lines))
        terminal = plain_python(script)
        r = in_window(script)
    print(f"{megabytes:g} MB of output ({lines:,} lines of 100 bytes), then loss()")
    print(f"{'':<34}{'measured':>12}  target")
    print(f"{'plain python, output to a pipe':<34}{terminal:>11.1f}s")
    print(f"{'window: open to result drawn':<34}{r['total']:>11.1f}s")
    print(f"{'window: longest stall, streaming':<34}{r['stall']:>10.0f}ms  <= 100 ms")
    print(f"{'window: 99th percentile tick gap':<34}{r['p99']:>10.0f}ms")
    print(f"{'window: longest stall, result':<34}{r['result_stall']:>10.0f}ms  <= 100 ms")
    print(f"{'log messages from the worker':<34}{r['messages']:>12,}  (one per <= 64 KB or 50 ms)")
    print(f"{'lines kept in the Log panel':<34}{r['log_lines']:>12,}")


if __name__ == "__main__":
    main()
