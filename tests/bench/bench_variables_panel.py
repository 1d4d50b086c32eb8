"""Benchmark: replacing what the Variables panel shows, grouped by layer and expanded.

Fills the panel with N synthetic variables (each in its own layer, as a model of N layers
of one weight), expands it, and times clearing it two ways in the same run: the panel's own
clear (every row taken at once) and QTreeWidget.clear() (the baseline: expanded rows
removed one by one). Target: linear in N (the baseline grows with N squared).

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/bench/bench_variables_panel.py [N ...]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtWidgets import QApplication, QTreeWidget

from app.panels.variables import VariablesPanel
from tfviz.report import Report, VariableReport


def report(n: int) -> Report:
    return Report(
        script="s.py",
        target="loss",
        variables=[
            VariableReport(
                f"layer_{i}.kernel", f"layer_{i}/kernel", "float32", [4, 4], "connected", None, 1.0
            )
            for i in range(n)
        ],
    )


def cleared_in(n: int, clear) -> float:
    panel = VariablesPanel()
    panel.set_report(report(n))
    panel.expandAll()
    t0 = time.perf_counter()
    clear(panel)
    return time.perf_counter() - t0


def main() -> None:
    QApplication.instance() or QApplication([])
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 3000, 6000]
    print("grouped, expanded Variables panel, cleared:")
    for n in sizes:
        ours, qts = cleared_in(n, VariablesPanel.clear), cleared_in(n, QTreeWidget.clear)
        print(
            f"  {n:>6,} variables: the panel's clear {ours:.3f} s   QTreeWidget.clear (baseline) {qts:.3f} s"
        )


if __name__ == "__main__":
    main()
