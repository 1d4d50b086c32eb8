"""The gradient-flow chart: each variable's gradient per element (log10), in order of first use.

The per-layer picture users otherwise assemble from TensorBoard histograms, drawn with the
engine's own magnitude rule (:mod:`tfviz.engine.magnitude`): the bar is what the rule measures,
the dashed line is its reference (the variables nearest the loss), and the dotted lines sit
:data:`DECADES` above and below it. A bar past a dotted line is exactly a variable the status,
``check`` and the JSON call vanishing or exploding, and it has their colour. A marker at the
bottom stands for a variable with no gradient (✕ for none, ○ for one exactly zero). A variable
the step never updates (``not_trained``) keeps its would-be bar, in its own colour, with a
"never updated" marker. The x axis names the layers; clicking a bar selects the variable.
"""

from __future__ import annotations

import html
import math
import statistics

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from tfviz.engine.magnitude import DECADES, role, scale
from tfviz.report import Report, VariableReport

from .. import theme
from ..graph.palette import STATUS_ICON_COLOR, variable_look
from .variables import layer_of

__all__ = ["DECADES", "FlowChart", "log_size"]

_TICK_FONT = QFont()
_TICK_FONT.setPointSizeF(7.5)


def log_size(v: VariableReport) -> float | None:
    """log10 of the gradient per element (``|grad| / sqrt(size)``); None where there is no
    finite, positive gradient to draw.

    >>> log_size(VariableReport("w", "w", "float32", [4, 25], "connected", grad_norm=1.0))
    -1.0
    """
    g = v.grad_norm
    if g is None or not math.isfinite(g) or g <= 0:
        return None
    size = math.prod(d if d is not None else 1 for d in v.shape)
    return math.log10(g / math.sqrt(size)) if size > 0 else None


def spaced_ticks(
    starts: list[tuple[int, str]], px_per_bar: float, metrics: QFontMetrics, gap: float = 12.0
) -> list[tuple[int, str]]:
    """The layer labels that fit side by side: each at its layer's first bar, kept only where
    it clears the label before it.

    >>> class M:
    ...     def horizontalAdvance(self, text): return 10 * len(text)
    >>> spaced_ticks([(0, "a"), (1, "b"), (5, "c")], 4.0, M(), gap=2.0)
    [(0, 'a'), (5, 'c')]
    """
    out: list[tuple[int, str]] = []
    right = -math.inf
    for x, text in starts:
        half = metrics.horizontalAdvance(text) / 2
        centre = x * px_per_bar
        if centre - half >= right + gap:
            out.append((x, text))
            right = centre + half
    return out


class FlowChart(QWidget):
    variableClicked = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        pg.setConfigOptions(antialias=True, background="w", foreground=theme.INK)
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setLabel("left", "log10 |grad|/element")
        self.plot.setLabel("bottom", "layers, in order of first use")
        self.plot.getAxis("bottom").setStyle(tickFont=_TICK_FONT)
        self.plot.showGrid(y=True, alpha=0.15)
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.plot.scene().sigMouseMoved.connect(self._hovered)
        #: what the three lines over the bars are, above the chart: inside it, their labels
        #: sat over the bars nearest the chart's edge
        self.key = QLabel()
        self.key.setTextFormat(Qt.TextFormat.RichText)
        self.key.setWordWrap(True)
        self.key.setStyleSheet("font-size:8pt")
        self.key.hide()
        self.caption = QLabel("Open a script to see each variable's gradient.")
        self.caption.setStyleSheet(f"color:{theme.MUTED}; font-size:8pt")
        self.caption.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.key)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.caption)
        self.names: list[str] = []
        self.heights: dict[str, float] = {}  # variable -> bar top (log10 per element)
        self.markers: dict[str, str] = {}  # variable -> "none" | "zero" | "never updated"
        self.looks: dict[str, str] = {}  # variable -> its variable_look (the bar's colour)
        self.layer_starts: list[tuple[int, str]] = []  # (first bar, layer name)
        self.base = 0.0
        #: the magnitude rule's reference for each bar (log10 per element): its own kind's, a
        #: kernel's the kernels', a bias's or scale's theirs; empty: too few variables to judge
        self.references: dict[str, float] = {}
        self._rows: list[VariableReport] = []

    def set_report(self, report: Report | None) -> None:
        self.plot.clear()
        self.key.hide()
        self.names, self.heights, self.markers, self.looks = [], {}, {}, {}
        self.references, self.layer_starts, self._rows = {}, [], []
        if report is None or not report.variables:
            self.caption.setText(
                "Open a script to see each variable's gradient."
                if report is None
                else "No trainable variable."
            )
            return
        vs = self._rows = list(report.variables)
        self.names = [v.name for v in vs]
        logs = {v.name: log_size(v) for v in vs}
        measured = scale(vs, report.graph)
        if measured is not None:
            # every bar has its kind's reference, those with no gradient too (their kind's, or all's)
            fallback = statistics.median(measured.references.values())
            self.references = {
                v.name: math.log10(measured.references.get(role(v.shape), fallback)) for v in vs
            }
        finite = [x for x in logs.values() if x is not None]
        refs = list(self.references.values())
        lows = finite + ([min(refs) - DECADES] if refs else [])
        self.base = math.floor(min(lows)) - 1.0 if lows else -1.0
        xs, tops, brushes = [], [], []
        marks: dict[str, list] = {"none": [], "zero": [], "never updated": []}
        for i, v in enumerate(vs):
            look = self.looks[v.name] = variable_look(v.status, v.kind, v.magnitude)
            color = STATUS_ICON_COLOR.get(look, theme.OFF_PATH_INK)
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
                # a cut inside a loop gives zeros, not None: still "none", as the status says
                zero = v.status == "connected" and (v.kind == "zero" or v.grad_norm == 0)
                kind = "zero" if zero else "none"
                self.markers[v.name] = kind
                marks[kind].append((i, self.base + 0.3))
        if xs:
            self.bars = pg.BarGraphItem(
                x=np.array(xs, float), y0=self.base, y1=np.array(tops), width=0.8, brushes=brushes, pen=None
            )
            self.plot.addItem(self.bars)
        for kind, symbol, color in (
            ("none", "x", STATUS_ICON_COLOR["disconnected"]),
            ("zero", "o", STATUS_ICON_COLOR["zero"]),
            ("never updated", "t", STATUS_ICON_COLOR["not_trained"]),
        ):
            pts = marks[kind]
            if pts:
                self.plot.addItem(
                    pg.ScatterPlotItem(
                        x=[p[0] for p in pts],
                        y=[p[1] for p in pts],
                        symbol=symbol,
                        size=11,
                        brush=pg.mkBrush(color),
                        pen=pg.mkPen(theme.INK if kind != "none" else color, width=1.5),
                        name=kind,
                    )
                )
        if self.references:
            self._draw_references(
                [self.references[v.name] for v in vs], measured is not None and measured.nearest
            )
        highs = tops + ([max(refs) + DECADES] if refs else [])
        top = max(highs) + 1.0 if highs else 1.0
        self.layer_starts = _layer_starts(vs)
        self._place_ticks()
        self.plot.setXRange(-0.7, len(vs) - 0.3, padding=0)
        self.plot.setYRange(self.base, top, padding=0.02)
        self.caption.setText(self._caption_text(measured is not None))

    def _draw_references(self, refs: list[float], nearest: bool) -> None:
        """The reference (dashed) and the lines :data:`DECADES` above and below it (dotted), over
        each bar: a bar past its own dotted line is exactly a variable the rule flags. Kernels
        are compared with kernels and biases and scales with theirs, so the lines step where
        the two references differ."""
        where = "nearest the loss" if nearest else "median"
        keys = []
        for offset, style, label, color in (
            (0.0, Qt.PenStyle.DashLine, f"reference ({where}, each of its kind)", theme.LABEL_INK),
            (
                DECADES,
                Qt.PenStyle.DotLine,
                f"+{DECADES:g} decades: exploding",
                STATUS_ICON_COLOR["exploding"],
            ),
            (
                -DECADES,
                Qt.PenStyle.DotLine,
                f"−{DECADES:g} decades: vanishing",
                STATUS_ICON_COLOR["vanishing"],
            ),
        ):
            xs = np.repeat(np.arange(len(refs), dtype=float), 2) + np.tile([-0.5, 0.5], len(refs))
            ys = np.repeat(np.array(refs) + offset, 2)
            self.plot.addItem(pg.PlotDataItem(xs, ys, pen=pg.mkPen(color, width=1, style=style), name=label))
            sample = "╌╌" if style == Qt.PenStyle.DashLine else "┈┈"
            keys.append(f"<span style='color:{color}'>{sample} {html.escape(label)}</span>")
        self.key.setText("&nbsp;&nbsp;&nbsp;".join(keys))
        self.key.show()

    def _caption_text(self, judged: bool) -> str:
        marked = list(self.markers.values())
        counts = {k: marked.count(k) for k in ("none", "zero", "never updated")}
        looks = list(self.looks.values())
        sized = {k: looks.count(k) for k in ("vanishing", "exploding", "cancelled")}
        refs = sorted(set(round(r, 1) for r in self.references.values()))
        parts = (
            ["reference " + " and ".join(f"1e{r + 0.0:.1f}" for r in refs) + " per element"]
            if judged and refs
            else ["too few variables with a gradient to judge their sizes"]
        )
        parts += [f"↓ {sized['vanishing']} vanishing"] if sized["vanishing"] else []
        parts += [f"↑ {sized['exploding']} exploding"] if sized["exploding"] else []
        parts += [f"≈ {sized['cancelled']} cancelled (rounding noise)"] if sized["cancelled"] else []
        parts += [f"✕ {counts['none']} without gradient"] if counts["none"] else []
        parts += [f"○ {counts['zero']} exactly zero"] if counts["zero"] else []
        never = counts["never updated"]
        parts += [f"▼ {never} never updated (not trained)"] if never else []
        return " · ".join(parts) + " — click a bar to select its variable"

    def _place_ticks(self) -> None:
        """Layer names under their first bar, as many as fit the chart's width."""
        if not self.names:
            return
        vb = self.plot.getPlotItem().vb
        width = max(1.0, vb.width() or self.plot.width())
        px = width / max(1.0, len(self.names) + 0.4)
        ticks = spaced_ticks(self.layer_starts, px, QFontMetrics(_TICK_FONT))
        self.plot.getAxis("bottom").setTicks([ticks, []])

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._place_ticks()

    def _hovered(self, pos) -> None:
        i = self._index_at(pos)
        if i is None:
            self.plot.setToolTip("")
            return
        v = self._rows[i]
        y = log_size(v)
        size = "no gradient" if y is None else f"{10**y:.3g} per element (|grad| {v.grad_norm:.3g})"
        layer = layer_of(v)
        self.plot.setToolTip(
            f"{v.name}"
            + (f"\nlayer: {layer}" if layer else "")
            + f"\n{size}"
            + (f"\n{v.explanation}" if v.explanation else "")
        )

    def _index_at(self, scene_pos) -> int | None:
        if not self.names:
            return None
        p = self.plot.getPlotItem().vb.mapSceneToView(scene_pos)
        i = round(p.x())
        return i if 0 <= i < len(self.names) and abs(p.x() - i) <= 0.45 else None

    def _clicked(self, ev) -> None:
        i = self._index_at(ev.scenePos())
        if i is not None:
            self.variableClicked.emit(self.names[i])

    def select_index(self, i: int) -> None:
        """Act as a click on bar ``i`` (tests, keyboard)."""
        if 0 <= i < len(self.names):
            self.variableClicked.emit(self.names[i])


def _layer_starts(vs: list[VariableReport]) -> list[tuple[int, str]]:
    """(first bar, layer name) for each run of variables of one layer; a variable outside any
    layer is named itself.

    >>> V = lambda n, t: VariableReport(n, t, "float32", [1], "connected")
    >>> _layer_starts([V("m.a.kernel", "a/kernel"), V("m.a.bias", "a/bias"), V("w", "w:0")])
    [(0, 'a'), (2, 'w')]
    """
    out: list[tuple[int, str]] = []
    last = None
    for i, v in enumerate(vs):
        name = layer_of(v).rsplit("/", 1)[-1] or v.name
        if name != last:
            out.append((i, name))
            last = name
    return out
