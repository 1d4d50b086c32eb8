"""Benchmark (not a test): two costs the window's users feel, against their targets.

1. Start-up: a fresh ``python`` imports Qt and the app, shows ``MainWindow`` (no spare
   worker, so no TensorFlow import competes) and runs the event loop once; target 1 s.
   Median of ``--repeat`` runs; beside it, a bare ``QApplication`` + ``QMainWindow`` in the
   same run as the baseline.
2. The Training dock fed a fast program: 100 batches of 100 steps for eight layers (what
   0.1 s batches of a 1000 steps/s program bring). Each batch is recorded and redrawn;
   target 50 ms of the GUI thread's CPU per batch (max) and 50 ms wall (median); then one
   paint of the 10,000-step dock, target 0.5 s.

3. Layout changes on large graphs: Expand all, then Collapse all, on a ResNet50 analysis
   (made once and cached in out/, as bench_latency.py does) and on a model-shaped graph of
   20,000 ops, with a 1 ms timer recording the longest gap between its ticks (the longest
   time the event loop was held) and the time until the graph is drawn. The baseline, in
   the same run: the same change made at once on the GUI thread (``rebuild()``), as before;
   the window's buttons draw in the background (app.graph.building). Target: no gap over
   100 ms.

4. The conv Jacobian's example-0 slice (``jacobian_conv.py``: J(conv output[0], kernel),
   (24, 24, 16) x (5, 5, 1, 16)), asked from the real window's kept session: from the
   request until the panel shows it, against the worker's own time for it (the answer's
   ``seconds``); target: at most 1 s more. And the first result after the window opens
   (bench_latency.py's ``first_result``): target, ``python``'s own time for the script plus
   1 s. bench_latency.py has the re-run rows (F5, F5 twice, Esc then F5).

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/bench/bench_window_costs.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

START = """
import os, sys, time
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
t0 = time.perf_counter()
from PySide6.QtWidgets import QApplication, QMainWindow
app = QApplication([])
if sys.argv[1] == "app":
    from app.window import MainWindow
    from app.worker_client import WorkerPool
    w = MainWindow(WorkerPool(spare=False))
else:
    w = QMainWindow()
w.show(); app.processEvents()
print(time.perf_counter() - t0)
assert "tensorflow" not in sys.modules
w.close()
"""


def start_up(kind: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", START, kind], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return float(out.stdout.split()[0])


def training_dock() -> tuple[float, float, float]:
    """(max CPU per batch, median wall per batch, one paint), seconds."""
    import numpy as np
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    from app.panels.training import TrainingPanel, WatchRequest

    app = QApplication.instance() or QApplication([])
    pg.setConfigOptions(antialias=True)  # as in the window
    p = TrainingPanel()
    p.resize(1200, 420)
    p.show()
    p.begin("/x/train.py", WatchRequest(("nan",)))
    rng = np.random.default_rng(0)
    layers = [f"layer_{i}" for i in range(8)]
    cpu, wall = [], []
    for b in range(100):
        batch = [
            {
                "step": s,
                "grad": {
                    name: (
                        float("nan")
                        if s % 997 == 0 and i == 3
                        else float(np.exp(-s / 3000 * (i + 1)) * (1 + 0.3 * rng.random()))
                    )
                    for i, name in enumerate(layers)
                },
                "update": {name: 0.01 for name in layers},
                "weight": {name: 2.0 for name in layers},
            }
            for s in range(b * 100 + 1, b * 100 + 101)
        ]
        t, c = time.perf_counter(), time.thread_time()
        p.add_points(batch)
        p.redraw()
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - t)
        app.processEvents()  # paints, as the event loop would between batches
    t = time.perf_counter()
    p.grab()
    paint = time.perf_counter() - t
    p.close()
    return max(cpu), statistics.median(wall), paint


def layout_changes() -> list[tuple[str, float, float, float, float]]:
    """(what, longest gap in the background, until drawn, longest gap at once, until drawn)."""
    import json

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.graph.view import GraphView
    from tests.bench.bench_latency import resnet_analysis
    from tests.bigdoc import deep_document
    from tfviz.analysisfile import load_analysis, parse_analysis

    app = QApplication.instance() or QApplication([])
    reports = {
        "ResNet50": load_analysis(resnet_analysis()),
        "20,000 ops": parse_analysis(json.dumps(deep_document(200, 100))),
    }

    def timed(view: GraphView, change, background: bool) -> tuple[float, float]:
        gaps, last = [0.0], [time.perf_counter()]

        def tick() -> None:
            now = time.perf_counter()
            gaps.append(now - last[0])
            last[0] = now

        timer = QTimer()
        timer.timeout.connect(tick)
        timer.start(1)
        app.processEvents()
        t0 = last[0] = time.perf_counter()
        change(view, background)
        while view.building():
            app.processEvents()
            time.sleep(0.0005)
        took = time.perf_counter() - t0
        tick()
        timer.stop()
        return max(gaps), took

    rows = []
    for name, report in reports.items():
        for what, change in (
            ("Expand all", lambda v, bg: v.set_all_expanded(True, background=bg)),
            ("Collapse all", lambda v, bg: v.set_all_expanded(False, background=bg)),
        ):
            figures = []
            for background in (True, False):
                view = GraphView()
                view.resize(1200, 800)
                view.show()
                view.set_report(report)
                if what == "Collapse all":
                    view.set_all_expanded(True)
                app.processEvents()
                figures.extend(timed(view, change, background))
                view.close()
            rows.append((f"{what}, {name}", *figures))
    return rows


def jacobian_slice() -> tuple[float, float]:
    """(seconds from the request until the panel shows the slice, the worker's seconds)."""
    from tests.bench.bench_latency import analysis, new_window, qapp, wait, warm_spare

    qapp()
    w = new_window(spare=True)
    try:
        warm_spare(w)
        analysis(w, lambda: w.open_script(str(ROOT / "resources" / "examples" / "jacobian_conv.py")))
        jc = w.jacobian
        got: dict = {}
        show = jc.panel.show_result

        def shown(res) -> None:
            show(res)
            got.setdefault("at", time.perf_counter())
            got["res"] = res

        jc.panel.show_result = shown
        t0 = time.perf_counter()
        jc.open("convnet/conv/Relu", "convnet/conv/kernel", of_index=[0, None, None, None])
        wait(lambda: "at" in got or jc.last_failed is not None, "the Jacobian slice", timeout=300)
        if "at" not in got:
            raise RuntimeError(f"the Jacobian failed: {jc.last_failed}")
        return got["at"] - t0, float(got["res"].seconds)
    finally:
        w.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    n = ap.parse_args().repeat
    ours, bare = [], []
    for _ in range(n):  # alternated, so load on the machine falls on both alike
        ours.append(start_up("app"))
        bare.append(start_up("bare"))
    cpu, wall, paint = training_dock()
    rows = [
        (f"window start-up (median of {n})", statistics.median(ours), statistics.median(bare), 1.0),
        ("Training dock: CPU per batch (max)", cpu, None, 0.05),
        ("Training dock: wall per batch (median)", wall, None, 0.05),
        ("Training dock: paint of 10,000 steps", paint, None, 0.5),
    ]
    print("| what | tfviz s | baseline s | target s | met |")
    print("|---|---|---|---|---|")
    for what, value, base, target in rows:
        base_s = "-" if base is None else f"{base:.3f} (bare Qt window)"
        print(f"| {what} | {value:.3f} | {base_s} | {target:.3f} | {'yes' if value <= target else 'NO'} |")
    shown, worker = jacobian_slice()
    from tests.bench.bench_latency import first_result

    first = first_result()
    print()
    print("| what | tfviz s | baseline s | target s | met |")
    print("|---|---|---|---|---|")
    print(
        f"| conv Jacobian, example-0 slice, request to panel | {shown:.2f} | {worker:.2f} (the worker's)"
        f" | {worker + 1:.2f} | {'yes' if shown <= worker + 1 else 'NO'} |"
    )
    limit = first["python"] + 1
    print(
        f"| first result after the window opens | {first['report shown']:.2f} | {first['python']:.2f}"
        f" (python SCRIPT) | {limit:.2f} | {'yes' if first['report shown'] <= limit else 'NO'} |"
    )
    print()
    print(
        "| layout change | longest gap, background s | drawn after s"
        " | at once: longest gap s | drawn after s | met |"
    )
    print("|---|---|---|---|---|---|")
    for what, gap, took, gap_now, took_now in layout_changes():
        met = "yes" if gap <= 0.1 else "NO"
        print(f"| {what} | {gap:.3f} | {took:.2f} | {gap_now:.3f} | {took_now:.2f} | {met} |")


if __name__ == "__main__":
    main()
