"""Benchmark: opening a 400,000-variable saved analysis.

Builds the document of :mod:`tests.bigdoc` (400,000 variables, each with its source line;
every 10th with its ``var:`` op, read op and edges: 80,001 ops, 80,000 edges, about
150 MB), writes it to a temporary file, then:

1. ``load_analysis`` on it, best of ``--repeat`` runs, split into its stages (read, parse,
   check: the schema's compiled validator and building the report) from the progress
   callback, per 100 MB beside the target, and next to the baselines: the checker written in
   code that the validator replaced, and the earlier checker (it called
   ``typing.get_type_hints`` for every object), with what those per-object calls alone cost here;
2. the same file opened in the window (offscreen Qt, the report not drawn): how long it
   takes and the longest gap between the ticks of a 5 ms timer meanwhile (an event-loop
   stall), with the window's load thread as shipped.

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/bench/bench_saved_load.py [--variables N]
        [--repeat R] [--no-window]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import tempfile
import time
import typing
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bigdoc import big_json  # noqa: E402
from tfviz import report as report_module  # noqa: E402
from tfviz.analysisfile import load_analysis  # noqa: E402

#: ``parse_analysis`` of the earlier checker on the 400,000-variable document (147 MB), measured
#: on the 2-core development machine (shared with other work) before the checker changed.
BASELINE_S = 123.1
BASELINE_VARIABLES = 400_000
#: The target: a saved analysis of 100 MB opens (read, parsed, validated, built) in 10 s.
TARGET_S_PER_100MB = 10.0
#: The same document through the checker written in code (per-class field tables), before
#: the schema's compiled validator replaced it: best of 2, on the 2-core development machine.
CODE_CHECKER_S = 4.17


def stages(path: str) -> dict[str, float]:
    marks: dict[str, float] = {}
    t0 = time.perf_counter()

    def progress(fraction: float, stage: str) -> None:
        marks.setdefault(stage, time.perf_counter() - t0)

    report = load_analysis(path, progress=progress)
    total = time.perf_counter() - t0
    read, parse, check = (
        marks.get(s, 0.0) for s in ("reading the file", "parsing the JSON", "checking the analysis")
    )
    assert len(report.variables) > 0
    return {
        "read": parse - read,
        "parse": check - parse,
        "check": total - check,
        "total": total,
        "objects": _objects(report),
    }


def _objects(report) -> int:
    g = report.graph
    sources = sum(x.source is not None for x in [*report.variables, *g.ops, *g.functions])
    return (
        1
        + len(report.variables)
        + len(report.problems)
        + 1
        + len(g.ops)
        + len(g.edges)
        + sum(len(o.outputs) for o in g.ops)
        + len(g.functions)
        + sources
    )


def hint_cost(objects: int) -> float:
    """What the old checker's per-object ``typing.get_type_hints`` calls alone cost here."""
    classes = [c for c in vars(report_module).values() if dataclasses.is_dataclass(c)]
    n = 2000
    t0 = time.perf_counter()
    for i in range(n):
        typing.get_type_hints(classes[i % len(classes)])
    return objects * (time.perf_counter() - t0) / n


def in_window(path: str) -> dict[str, float]:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.window import MainWindow
    from app.worker_client import WorkerPool

    qapp = QApplication.instance() or QApplication([])
    w = MainWindow(pool=WorkerPool(spare=False))
    w.show()
    shown: list[float] = []
    kept: list = []  # the report lives on, as in the window

    def show(path: str, report) -> None:  # the window's own show, replaced: not drawn
        shown.append(time.perf_counter())
        kept.append(report)

    w.saved.show = show
    last = [time.perf_counter()]
    worst = [0.0]

    def tick() -> None:
        now = time.perf_counter()
        worst[0] = max(worst[0], now - last[0])
        last[0] = now

    timer = QTimer(interval=5)
    timer.timeout.connect(tick)
    timer.start()
    for _ in range(20):
        qapp.processEvents()
        time.sleep(0.005)
    worst[0], last[0] = 0.0, time.perf_counter()
    t0 = time.perf_counter()
    w.open_script(path)
    while not shown and w.saved.current is not None:
        qapp.processEvents()
        time.sleep(0.001)
    elapsed = (shown[0] if shown else time.perf_counter()) - t0
    during, worst[0] = worst[0], 0.0
    end = time.perf_counter() + 2.0  # then two seconds of a window making objects as it runs
    junk: list = []
    while time.perf_counter() < end:
        junk.append([{"x": i} for i in range(200)])
        del junk[:-50]
        qapp.processEvents()
        time.sleep(0.001)
    timer.stop()
    w.close()
    return {"seconds": elapsed, "stall_ms": 1000 * during, "after_ms": 1000 * worst[0], "shown": bool(shown)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variables", type=int, default=BASELINE_VARIABLES)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-window", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.tfviz.json")
        data = big_json(args.variables, graph_every=10)
        Path(path).write_bytes(data)
        mb = len(data) / 1e6
        del data
        gc.collect()
        runs = [stages(path) for _ in range(args.repeat)]
        best = min(runs, key=lambda r: r["total"])
        objects = int(best["objects"])
        baseline = BASELINE_S * args.variables / BASELINE_VARIABLES
        print(f"document: {args.variables:,} variables, {mb:.0f} MB, {objects:,} dataclass objects")
        print(
            f"load_analysis (best of {args.repeat}): {best['total']:.2f} s  = read {best['read']:.2f}"
            f" + parse {best['parse']:.2f} + check {best['check']:.2f}"
            f"  ({1e6 * best['total'] / objects:.1f} us per object)"
        )
        per_100 = best["total"] * 100 / mb
        print(
            f"per 100 MB: {per_100:.2f} s  (target {TARGET_S_PER_100MB:.0f} s:"
            f" {'met' if per_100 <= TARGET_S_PER_100MB else 'NOT met'})"
        )
        exact = "" if args.variables == BASELINE_VARIABLES else ", scaled linearly"
        code = CODE_CHECKER_S * args.variables / BASELINE_VARIABLES
        print(f"the checker written in code, before the schema validated: {code:.2f} s{exact}")
        print(
            f"baseline, the earlier checker: {baseline:.1f} s{exact}"
            f"  -> {baseline / best['total']:.0f}x faster"
        )
        print(
            f"  its per-object typing.get_type_hints calls alone, measured here: {hint_cost(objects):.1f} s"
        )
        if not args.no_window:
            r = in_window(path)
            print(
                f"in the window (read on a thread, not drawn): {r['seconds']:.2f} s; longest"
                f" event-loop stall {r['stall_ms']:.0f} ms while loading, {r['after_ms']:.0f} ms in"
                f" the 2 s after{'' if r['shown'] else ' (NOT shown)'}"
            )


if __name__ == "__main__":
    main()
