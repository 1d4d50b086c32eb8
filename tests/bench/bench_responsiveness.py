"""Benchmark: the GUI's event loop while a real analysis runs.

Opens an example in the real window with the real worker, and a 5 ms timer
records the longest gap between its ticks from the moment the script is
opened until the result has been drawn. Target: no stall over 100 ms.

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/bench/bench_responsiveness.py [SCRIPT]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[2]


def measure(script: str) -> tuple[float, float, float]:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.window import MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow()
    window.resize(1400, 900)
    window.show()
    deadline = time.perf_counter() + 60
    while not window.pool.spare_ready() and time.perf_counter() < deadline:
        app.processEvents()
        time.sleep(0.01)
    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(5)
    start = time.perf_counter()
    last[0] = start
    window.open_script(script)
    while window.analysis.busy() and time.perf_counter() - start < 300:
        app.processEvents()
        time.sleep(0.001)
    total = time.perf_counter() - start
    settle = time.perf_counter() + 1.0
    while time.perf_counter() < settle:  # the first paint of the result
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    ok = window.analysis.report is not None
    window.close()
    window.pool.shutdown()
    if not ok:
        raise SystemExit(f"analysis failed: {window.analysis.last_error}")
    gaps.sort()
    return gaps[-1] * 1000, gaps[int(len(gaps) * 0.99)] * 1000, total


def main() -> None:
    scripts = sys.argv[1:] or [
        str(ROOT / "resources/examples/seed1_svd_dynamic_shape.py"),
        str(ROOT / "resources/examples/healthy_resnet50.py"),
    ]
    print(f"{'script':<32}{'analysis s':>11}{'max stall ms':>14}{'p99 ms':>8}  target")
    for s in scripts:
        worst, p99, total = measure(s)
        print(f"{Path(s).name:<32}{total:>11.1f}{worst:>14.0f}{p99:>8.0f}  max stall <= 100 ms")


if __name__ == "__main__":
    main()
