"""Jacobian heatmap drawing time (target: a 2000x2000 heatmap drawn in at most 50 ms).

    QT_QPA_PLATFORM=offscreen .venv/bin/python tests/bench/bench_heatmap.py [--repeat 7]

Side by side in one process, each with new data every run (median of runs):

- a bare pyqtgraph ImageItem in a plot: ``setImage(data)`` (auto levels) and a repaint;
- the panel's heatmap (``app.jacobian.heatmap.Heatmap.set_matrix``: symmetric levels
  around zero, the diverging lookup table, block lines, axis range) and a repaint;
- the whole panel answering a result (``JacobianPanel.show_result`` with a decoded
  Jacobian: message, axis labels, heatmap) and a repaint.

A repaint is ``view.viewport().repaint()``: the view is painted synchronously into
its backing store, as on screen (``ImageItem.qimage`` is checked, so the image was
really converted and drawn). Not a timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QApplication

from app.jacobian.heatmap import Heatmap
from app.jacobian.panel import JacobianPanel
from tfviz.jacobian.data import Array, Jacobian, TensorRef


def timed(fn, widgets, repeat: int) -> float:
    for _ in range(5):
        QApplication.processEvents()  # shown and exposed, so a repaint really paints
    times = []
    for k in range(repeat + 1):
        t0 = time.perf_counter()
        fn(k)
        for w in widgets:
            w.repaint()
        if k:  # the first run builds caches (lookup tables, fonts)
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--sizes", default="500,2000,4000")
    opts = ap.parse_args()
    app = QApplication.instance() or QApplication([])
    rng = np.random.default_rng(0)
    print(f"{'n x n':>11} | {'bare ImageItem':>14} | {'panel heatmap':>13} | {'panel result':>12} | target")
    for n in (int(s) for s in opts.sizes.split(",")):
        t_bare, t_heat, t_panel = one_size(n, opts.repeat, rng)
        target = "≤ 50 ms" if n == 2000 else "—"
        print(f"{n:>5} x {n:<5} | {t_bare:>11.1f} ms | {t_heat:>10.1f} ms | {t_panel:>9.1f} ms | {target}")
    app.processEvents()


def one_size(n: int, repeat: int, rng) -> tuple[float, float, float]:
    """Bare ImageItem, panel heatmap, whole panel: median ms for new n x n data."""
    data = [rng.standard_normal((n, n)).astype(np.float32) for _ in range(3)]

    bare = pg.GraphicsLayoutWidget()
    plot = bare.addPlot()
    img = pg.ImageItem(axisOrder="row-major")
    plot.addItem(img)
    bare.resize(900, 600)
    bare.show()
    t_bare = timed(lambda k: img.setImage(data[k % 3]), [bare.viewport()], repeat)

    heat = Heatmap()
    heat.resize(900, 600)
    heat.show()
    t_heat = timed(lambda k: heat.set_matrix(data[k % 3], [n], [n]), [heat.viewport()], repeat)

    panel = JacobianPanel()
    panel.resize(1000, 700)
    panel.show()
    results = []
    for d in data:
        j = Jacobian(
            TensorRef("y", "tensor", "y", 0, "float32", [n]),
            TensorRef("W", "variable", "var:W", 0, "float32", [n]),
            values=Array.from_numpy(d),
            mode="reverse",
            chunks=1,
        )
        j.array()  # decoded on the worker client's parse thread, as in the app
        results.append(j)
    t_panel = timed(lambda k: panel.show_result(results[k % 3]), [panel, panel.single.viewport()], repeat)
    assert img.qimage is not None and heat.image.qimage is not None
    assert panel.single.image.qimage is not None
    for w in (bare, heat, panel):
        w.close()
    return t_bare, t_heat, t_panel


if __name__ == "__main__":
    main()
