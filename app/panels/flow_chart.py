"""The gradient-flow chart: log10 of each variable's gradient norm, in order of first use.

The per-layer picture users otherwise assemble from TensorBoard histograms: bars coloured
by status, a marker at the bottom for a variable with no gradient (✕ for none, ○ for a
gradient that is exactly zero), the median and ±4 decades as reference lines, so vanishing
and exploding gradients stand out. A variable the step never updates (``not_trained``) keeps
its would-be bar, in its own colour, with a "never updated" marker. Clicking a bar selects
the variable.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.graph.palette import STATUS_ICON_COLOR, variable_look
from tfviz.report import Report

#: How many decades from the median the reference lines sit.
DECADES = 4.0


def log_norm(norm: float | None) -> float | None:
    """log10 of a finite, positive norm; None where there is no bar to draw."""
    if norm is None or not math.isfinite(norm) or norm <= 0:
        return None
    return math.log10(norm)


class FlowChart(QWidget):
    variableClicked = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        pg.setConfigOptions(antialias=True, background="w", foreground="#303030")
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setLabel("left", "log10 |grad|")
        self.plot.setLabel("bottom", "variables, in order of first use")
        self.plot.showGrid(y=True, alpha=0.15)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.caption = QLabel("Open a script to see each variable's gradient norm.")
        self.caption.setStyleSheet("color:#707070; font-size:8pt")
        self.caption.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.caption)
        self.names: list[str] = []
        self.heights: dict[str, float] = {}  # variable -> bar top (log10 norm)
        self.markers: dict[str, str] = {}  # variable -> "none" | "zero" | "never updated"
        self.base = 0.0
        self.median: float | None = None

    def set_report(self, report: Report | None) -> None:
        self.plot.clear()
        self.names, self.heights, self.markers, self.median = [], {}, {}, None
        if report is None or not report.variables:
            self.caption.setText("Open a script to see each variable's gradient norm."
                                 if report is None else "No trainable variable.")
            return
        vs = report.variables
        self.names = [v.name for v in vs]
        logs = {v.name: log_norm(v.grad_norm) for v in vs}
        finite = [x for x in logs.values() if x is not None]
        self.median = statistics.median(finite) if finite else 0.0
        lo = min(finite + [self.median - DECADES]) if finite else -1.0
        self.base = math.floor(lo) - 1.0
        xs, tops, brushes = [], [], []
        marks: dict[str, list] = {"none": [], "zero": [], "never updated": []}
        for i, v in enumerate(vs):
            look = variable_look(v.status, v.kind)
            color = STATUS_ICON_COLOR.get(look, "#777777")
            y = logs[v.name]
            if look == "not_trained":
                self.markers[v.name] = "never updated"
                marks["never updated"].append((i, y if y is not None else self.base + 0.3))
            if y is not None and v.status != "broken":
                xs.append(i)
                tops.append(y)
                brushes.append(pg.mkBrush(color))
                self.heights[v.name] = y
            elif look != "not_trained":
                kind = "zero" if v.kind == "zero" or v.grad_norm == 0 else "none"
                self.markers[v.name] = kind
                marks[kind].append((i, self.base + 0.3))
        if xs:
            self.bars = pg.BarGraphItem(x=np.array(xs, float), y0=self.base, y1=np.array(tops),
                                        width=0.8, brushes=brushes, pen=None)
            self.plot.addItem(self.bars)
        for kind, symbol, color in (("none", "x", STATUS_ICON_COLOR["disconnected"]),
                                    ("zero", "o", STATUS_ICON_COLOR["zero"]),
                                    ("never updated", "t", STATUS_ICON_COLOR["not_trained"])):
            pts = marks[kind]
            if pts:
                self.plot.addItem(pg.ScatterPlotItem(
                    x=[p[0] for p in pts], y=[p[1] for p in pts], symbol=symbol, size=11,
                    brush=pg.mkBrush(color), pen=pg.mkPen("#303030" if kind != "none" else color, width=1.5),
                    name=kind))
        for y, style, label in ((self.median, Qt.PenStyle.DashLine, "median"),
                                (self.median + DECADES, Qt.PenStyle.DotLine, "+4 decades (exploding)"),
                                (self.median - DECADES, Qt.PenStyle.DotLine, "−4 decades (vanishing)")):
            line = pg.InfiniteLine(pos=y, angle=0, pen=pg.mkPen("#606060", width=1, style=style),
                                   label=label, labelOpts={"position": 0.995, "color": "#505050",
                                                           "fill": (255, 255, 255, 200),
                                                           "anchors": [(1, 1), (1, 1)]})
            self.plot.addItem(line)
        top = max(tops + [self.median + DECADES]) + 1.0
        step = max(1, len(vs) // 16)  # the row number in Variables; names would overlap
        ticks = [(i, str(i)) for i in range(0, len(vs), step)]
        self.plot.getAxis("bottom").setTicks([ticks])
        self.plot.setXRange(-0.7, len(vs) + 1.2, padding=0)  # room on the right for the line labels
        self.plot.setYRange(self.base, top, padding=0.02)
        n_none = sum(1 for k in self.markers.values() if k == "none")
        n_zero = sum(1 for k in self.markers.values() if k == "zero")
        n_nt = sum(1 for k in self.markers.values() if k == "never updated")
        parts = [f"median 1e{self.median:.1f}"]
        parts += [f"✕ {n_none} without gradient"] if n_none else []
        parts += [f"○ {n_zero} exactly zero"] if n_zero else []
        parts += [f"▼ {n_nt} never updated (not trained)"] if n_nt else []
        self.caption.setText(" · ".join(parts) + " — click a bar to select its variable")

    def _clicked(self, ev) -> None:
        if not self.names:
            return
        p = self.plot.getPlotItem().vb.mapSceneToView(ev.scenePos())
        i = round(p.x())
        if 0 <= i < len(self.names) and abs(p.x() - i) <= 0.45:
            self.variableClicked.emit(self.names[i])

    def select_index(self, i: int) -> None:
        """Act as a click on bar ``i`` (tests, keyboard)."""
        if 0 <= i < len(self.names):
            self.variableClicked.emit(self.names[i])


def add_flow_dock(window) -> FlowChart:
    """The "Gradient flow" dock, tabbed with Problems; a click selects the variable."""
    from app.panels.docks import add_dock

    chart = FlowChart()
    add_dock(window, "Gradient flow", chart, Qt.DockWidgetArea.BottomDockWidgetArea, beside="Problems")
    window.docks["Problems"].raise_()
    chart.variableClicked.connect(window.variables.select_name)
    return chart
