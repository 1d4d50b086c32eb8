"""The Training dock: a watched run's record (``tfviz check --until`` in the window), live.

While the program trains, the worker sends each gradient step's norms per layer
(:func:`tfviz.program.layerpoints.layer_point`); the dock plots them as they come: the gradient
norm on top and the update/weight ratio below, both on a log scale, sharing the step axis.
Values a log scale cannot show are markers instead of breaking the curves: ✕ on a top row for
a NaN or infinite gradient, ○ on a bottom row for an exactly zero one. When the run stops, a
vertical line marks the step where a rule fired (the step the graph shows). Clicking a step
offers "Diagnose step N": an ordinary program analysis to that step, which keeps this record.

Steps arrive in thousands a second from a fast program: they are appended to numpy buffers
and the curves are redrawn from a timer at most :data:`REDRAW_MS` apart, never per message.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from tfviz.palette import text_color
from tfviz.program.watch import CONDITIONS, ZERO_STEPS  # Qt-free and TensorFlow-free
from tfviz.report import Report, WatchSummary

from .. import theme

#: The shortcut of "Run until…" (the Analysis menu), named in the empty dock.
SHORTCUT = "Ctrl+Shift+R"
#: The most often the curves are redrawn while steps arrive, in milliseconds.
REDRAW_MS = 100
#: What each condition means, for the dialog (the rules of :mod:`tfviz.program.watch`).
CONDITION_WORDS = {
    "nan": ("NaN / Inf", "a gradient or the loss is not finite"),
    "none": ("None", "a variable that had a gradient gets None"),
    "zero": ("Zero", "a gradient stays exactly zero for several steps in a row"),
    "vanishing": ("Vanishing", "a gradient sits over 5 decades below those nearest the loss"),
    "exploding": ("Exploding", "a gradient sits over 5 decades above those nearest the loss"),
}
#: Distinct colours for a few layers (Tableau 10: told apart at a glance, also in print).
FEW_COLORS = theme.SERIES


def layer_colors(n: int) -> list[str]:
    """One colour per layer, input first. Up to ten are told apart by hue; beyond that no
    hue set stays distinct, so the colour follows depth (viridis, its pale end left out):
    a gradient that fades layer by layer then reads as a fade in colour.

    >>> layer_colors(2)
    ['#4E79A7', '#F28E2B']
    >>> len(set(layer_colors(30)))
    30
    """
    if n <= len(FEW_COLORS):
        return list(FEW_COLORS[:n])
    cmap = pg.colormap.get("viridis")
    return [cmap.map(0.88 * i / (n - 1), mode="qcolor").name() for i in range(n)]


def condition_color(condition: str | None) -> str:
    """The fired line's colour: the status colour of that kind of problem, as in the graph."""
    return text_color({"none": "disconnected", None: "passes"}.get(condition, condition or "passes"))


@dataclass(frozen=True)
class WatchRequest:
    """What a watched run watches for: the worker's ``until``, ``zero_steps`` and the most steps."""

    until: tuple[str, ...]
    #: None: until the program ends
    max_steps: int | None = None
    #: None: the library's default (:data:`tfviz.program.watch.ZERO_STEPS`)
    zero_steps: int | None = None

    def words(self) -> str:
        """>>> WatchRequest(("nan", "zero"), 500).words()
        'nan or zero, for at most 500 steps'
        """
        names = list(self.until)
        said = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        return said + (f", for at most {self.max_steps:,} steps" if self.max_steps else "")


#: A gradient norm the step did not report (a layer first seen later, a gradient that is None):
#: norms are never negative, and NaN is a value of its own here (a NaN gradient).
MISSING = -1.0


class TrainingRecord:
    """The steps watched so far: the step numbers, and per layer the gradient norm and the
    update/weight ratio, in numpy buffers that double when full (an append costs no copy of
    the record). A norm not reported is :data:`MISSING`, a ratio NaN; rows stay sorted by step."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.layers: list[str] = []
        self._column: dict[str, int] = {}
        self.n = 0
        self._steps = np.empty(1024)
        self._grad = np.full((0, 1024), MISSING)
        self._ratio = np.full((0, 1024), np.nan)

    @property
    def steps(self) -> np.ndarray:
        return self._steps[: self.n]

    @property
    def grads(self) -> np.ndarray:
        """Gradient norms, one row per layer, one column per step."""
        return self._grad[: len(self.layers), : self.n]

    def grad(self, i: int) -> np.ndarray:
        return self._grad[i, : self.n]

    def ratio(self, i: int) -> np.ndarray:
        return self._ratio[i, : self.n]

    def add(self, points: list[Any]) -> None:
        """Append ``steps`` points (``{"step", "grad", "update", "weight"}``, values may be NaN,
        infinite or missing)."""
        pts = [p for p in points if isinstance(p, dict) and _number(p.get("step")) is not None]
        if not pts:
            return
        for p in pts:
            for name in (*_mapping(p.get("grad")), *_mapping(p.get("update"))):
                if name not in self._column:
                    self._column[name] = len(self.layers)
                    self.layers.append(name)
        self._reserve(self.n + len(pts), len(self.layers))
        first = self.n
        col = self._column
        for i, p in enumerate(pts, start=first):
            self._steps[i] = _number(p.get("step"))
            for name, v in _mapping(p.get("grad")).items():
                x = _number(v)
                self._grad[col[name], i] = MISSING if x is None else x
            weight = _mapping(p.get("weight"))
            for name, u in _mapping(p.get("update")).items():
                upd, w = _number(u), _number(weight.get(name))
                # a weight of 0 (a zero initializer's first step) has no ratio to show
                if upd is not None and w is not None and w > 0 and math.isfinite(w):
                    self._ratio[col[name], i] = upd / w
        self.n += len(pts)
        if first and self._steps[first] < self._steps[first - 1]:
            self._sort()  # a batch decoded off the GUI thread came after a later one

    def index_of(self, step: float) -> int | None:
        """The row of the recorded step nearest ``step``."""
        if not self.n:
            return None
        s = self.steps
        i = int(np.searchsorted(s, step))
        if i >= self.n or (i > 0 and step - s[i - 1] <= s[i] - step):
            i -= 1
        return i

    def _reserve(self, rows: int, layers: int) -> None:
        cap = self._steps.shape[0]
        if rows > cap:
            cap = max(rows, 2 * cap)
            self._steps = np.resize(self._steps, cap)
        if cap != self._grad.shape[1] or layers > self._grad.shape[0]:
            grown = []
            for old, fill in ((self._grad, MISSING), (self._ratio, np.nan)):
                new = np.full((max(layers, old.shape[0]), cap), fill)
                new[: old.shape[0], : self.n] = old[:, : self.n]
                grown.append(new)
            self._grad, self._ratio = grown

    def _sort(self) -> None:
        order = np.argsort(self.steps, kind="stable")
        self._steps[: self.n] = self.steps[order]
        self._grad[:, : self.n] = self._grad[:, : self.n][:, order]
        self._ratio[:, : self.n] = self._ratio[:, : self.n][:, order]


def _mapping(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(exponent: float, minor: tuple[int, ...] = (2, 5)) -> str:
    """A log axis's tick: whole decades as powers of ten; a tick between them as a number when
    its mantissa is in ``minor``, else unlabelled (0.3, 0.4, … 0.9 would overlap).

    >>> [power_of_ten(e) for e in (0, 1, 2, -3, np.log10(2e-5), np.log10(0.3))]
    ['1', '10', '10²', '10⁻³', '2e-05', '']
    """
    e = round(exponent)
    if abs(exponent - e) > 1e-6:
        mantissa = round(10 ** (exponent - math.floor(exponent)))
        return f"{10**exponent:.2g}" if mantissa in minor else ""
    return {0: "1", 1: "10"}.get(e) or "10" + str(e).translate(_SUPERSCRIPT)


class LogAxis(pg.AxisItem):
    """A left axis in log mode labelled 10⁻⁶ … 1 … 10³ alike (pyqtgraph mixes 0.01 and 10⁻⁶),
    with no SI prefix: a norm of 1e-3 is not "1 (x0.001)". Ticks between decades are labelled
    (2 and 5 of each) only when the axis spans little more than one decade, all of them below half
    a decade."""

    def __init__(self) -> None:
        super().__init__("left")
        self.enableAutoSIPrefix(False)

    def logTickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph's name
        span = self.range[1] - self.range[0]
        minor = tuple(range(2, 10)) if span <= 0.5 else (2, 5) if span <= 1.5 else ()
        return [power_of_ten(v, minor) for v in values]


class StepAxis(pg.AxisItem):
    """A bottom axis of gradient steps: whole steps only (a run of 3 steps was labelled 1.5
    and 2.5), at pyqtgraph's spacing where that is a whole number of steps or more."""

    def __init__(self) -> None:
        super().__init__("bottom")
        self.enableAutoSIPrefix(False)

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph's names
        levels = []
        for spacing, values in super().tickValues(minVal, maxVal, size):
            if spacing < 1:
                spacing = 1.0
                values = [float(v) for v in range(math.ceil(minVal), math.floor(maxVal) + 1)]
            levels.append((spacing, [v for v in values if float(v).is_integer()]))
        # one level of whole steps is enough: a second at the same spacing draws each twice
        seen: set[float] = set()
        out = []
        for spacing, values in levels:
            values = [v for v in values if v not in seen]
            seen.update(values)
            if values:
                out.append((spacing, values))
        return out

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph's name
        return [str(int(round(v))) for v in values]


def on_log_scale(values: np.ndarray) -> np.ndarray:
    """What a log axis can draw: positive finite values; the rest become gaps (NaN).

    >>> on_log_scale(np.array([1.0, 0.0, np.nan, np.inf, -1.0, 2.0])).tolist()
    [1.0, nan, nan, nan, nan, 2.0]
    """
    return np.where(np.isfinite(values) & (values > 0), values, np.nan)


class TrainingPanel(QWidget):
    """The Training dock's content: a header, the two plots, and the list of layers."""

    #: the user chose "Diagnose step N"
    diagnoseRequested = Signal(int)
    #: the empty dock's "Run until…" button
    runRequested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.record = TrainingRecord()
        self.request: WatchRequest | None = None
        self.script = ""  # the record's program
        self.running = False
        self.ended = ""  # how the run ended without a result: "cancelled", "stopped", "failed"
        self.watch: WatchSummary | None = None
        self.diagnosed: int | None = None
        self._drawn = -1  # the record's length at the last redraw

        self.header = QLabel()
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.header.setWordWrap(True)
        self.readout = QLabel()
        self.readout.setStyleSheet(f"color:{theme.SOFT_INK}; font-size:8pt")
        self.plots = pg.GraphicsLayoutWidget()
        self.plots.setBackground("w")
        self.grad_plot = self.plots.addPlot(row=0, col=0, axisItems={"left": LogAxis(), "bottom": StepAxis()})
        self.ratio_plot = self.plots.addPlot(
            row=1, col=0, axisItems={"left": LogAxis(), "bottom": StepAxis()}
        )
        self.ratio_plot.setXLink(self.grad_plot)
        # Titles, not axis labels: a vertical label longer than a short plot is cut off.
        for plot, title in (
            (self.grad_plot, "‖gradient‖ per layer, log scale"),
            (self.ratio_plot, "‖update‖ / ‖weight‖ per layer, log scale"),
        ):
            plot.setLogMode(x=False, y=True)
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.showGrid(x=False, y=True, alpha=0.15)
            plot.setTitle(title, size="8.5pt", color=theme.TITLE_INK)
            plot.getAxis("left").setWidth(48)  # the two plots' step axes line up
            plot.getViewBox().setDefaultPadding(0.06)  # a marker on the last step or the top row shows whole
        self.grad_plot.getAxis("bottom").setStyle(showValues=False)
        self.ratio_plot.setLabel("bottom", "gradient step")
        # Updates near a thousandth of the weights is the usual rule of thumb for a healthy step.
        self.ratio_plot.addItem(
            pg.InfiniteLine(
                pos=-3,
                angle=0,
                pen=pg.mkPen(theme.GUIDE, width=1, style=Qt.PenStyle.DotLine),
                label="typical ≈ 10⁻³",
                labelOpts={
                    "position": 0.99,
                    "color": theme.MUTED,
                    "fill": (255, 255, 255, 200),
                    "anchors": [(1, 1), (1, 1)],
                },
            )
        )
        scene = self.plots.scene()
        scene.sigMouseClicked.connect(self._clicked)
        scene.sigMouseMoved.connect(self._hovered)
        self._curves: list[tuple[Any, Any]] = []  # per layer: gradient curve, ratio curve
        self._visible: list[bool] = []  # per layer: ticked in the list
        self._marks: dict[tuple[str, int], Any] = {}  # ("nan" | "zero", layer) -> its markers
        self._marked: dict[tuple[str, int], tuple[int, float]] = {}  # -> (markers, row) drawn
        self._lines: list[Any] = []  # the fired and diagnosed steps' lines

        self.layers = QListWidget()
        self.layers.setMaximumWidth(170)
        self.layers.setToolTip("Layers, input first; untick one to hide its curves")
        self.layers.itemChanged.connect(self._layer_toggled)

        self.empty = QWidget()
        hint = QLabel(
            f"<p><b>Run until…</b> ({SHORTCUT}) to watch training.</p>"
            f"<p style='color:{theme.MUTED}'>"
            "The program runs as usual; every gradient step's norms per layer appear here"
            " as it trains, and it stops at the first step where a gradient goes NaN,"
            " None, zero, vanishing or exploding: that step is diagnosed.</p>"
        )
        hint.setWordWrap(True)
        hint.setTextFormat(Qt.TextFormat.RichText)
        run = QPushButton("Run until…")
        run.clicked.connect(self.runRequested)
        ev = QVBoxLayout(self.empty)
        ev.addStretch(1)
        ev.addWidget(hint)
        ev.addWidget(run, 0, Qt.AlignmentFlag.AlignLeft)
        ev.addStretch(2)
        ev.setContentsMargins(24, 8, 24, 8)

        content = QWidget()
        top = QHBoxLayout()
        top.addWidget(self.plots, 1)
        top.addWidget(self.layers)
        cl = QVBoxLayout(content)
        cl.setContentsMargins(4, 2, 4, 2)
        cl.setSpacing(2)
        cl.addWidget(self.header)
        cl.addLayout(top, 1)
        cl.addWidget(self.readout)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.empty)
        self.pages.addWidget(content)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.pages)

        self._timer = QTimer(self, singleShot=True, interval=REDRAW_MS)
        self._timer.timeout.connect(self.redraw)
        self.clear()

    # -- the run ------------------------------------------------------------------
    def clear(self) -> None:
        """Forget the record: a new watched run, or another script."""
        self.record.clear()
        self.request, self.script, self.running, self.ended = None, "", False, ""
        self.watch, self.diagnosed, self._drawn = None, None, -1
        for plot in (self.grad_plot, self.ratio_plot):
            for curve in plot.listDataItems():
                plot.removeItem(curve)
        self._remove_lines()
        self._curves, self._marks, self._marked, self._visible = [], {}, {}, []
        self.layers.clear()
        self.readout.setText("")
        self.pages.setCurrentWidget(self.empty)
        self._update_header()

    def begin(self, script: str, request: WatchRequest) -> None:
        """A watched run of ``script`` starts: a new record."""
        self.clear()
        self.request, self.script, self.running = request, script, True
        self.pages.setCurrentIndex(1)
        self.readout.setText("Click a step to diagnose it; drag to pan, scroll to zoom.")
        self._update_header()

    def add_points(self, points: list) -> None:
        """A ``steps`` message's points: recorded now, drawn by the next redraw."""
        self.record.add(points)
        if self.record.n and self.pages.currentIndex() == 0:
            self.pages.setCurrentIndex(1)
        if not self._timer.isActive():
            self._timer.start()

    def show_report(self, report: Report | None) -> None:
        """A result: a watched run's marks its fired step; another script's forgets the record."""
        if report is None:
            return
        if self.script and report.script and report.script != self.script:
            self.clear()  # a saved analysis of another program
            return
        if report.watch is not None and self.running:
            self.running = False
            self.watch = report.watch
            self.redraw()
            self._place_lines()

    def stop(self, how: str) -> None:
        """The watched run ended without a result: ``cancelled``, ``stopped`` or ``failed``."""
        if self.running:
            self.running, self.ended = False, how
            self.redraw()

    def mark_diagnosed(self, step: int) -> None:
        """A plain analysis of ``step`` was asked for from this record: a line says which."""
        if self.record.n:
            self.diagnosed = step
            self._place_lines()
            self._update_header()

    # -- drawing ------------------------------------------------------------------
    def redraw(self) -> None:
        """Bring the curves up to the record (the timer's, at most every REDRAW_MS)."""
        self._timer.stop()
        rec = self.record
        if rec.n != self._drawn:
            self._drawn = rec.n
            self._sync_layers()
            x = rec.steps
            for i, (g, r) in enumerate(self._curves):
                g.setData(x, on_log_scale(rec.grad(i)), connect="finite")
                r.setData(x, on_log_scale(rec.ratio(i)), connect="finite")
            self._place_marks()
        self._update_header()

    def _sync_layers(self) -> None:
        """A curve pair and a list row for each layer seen since the last redraw."""
        names = self.record.layers
        if len(names) == len(self._curves):
            return
        colors = layer_colors(len(names))
        self.layers.blockSignals(True)
        for i, name in enumerate(names):
            pen = pg.mkPen(colors[i], width=1)  # wider lines are stroked: ten times slower
            if i < len(self._curves):  # past ten layers the scheme changes: recoloured
                for c in self._curves[i]:
                    c.setPen(pen)
                self.layers.item(i).setIcon(_swatch(colors[i]))
                continue
            g = self.grad_plot.plot(pen=pen, name=name)
            r = self.ratio_plot.plot(pen=pen, name=name)
            for c in (g, r):
                c.setClipToView(True)
                c.setDownsampling(auto=True, method="peak")
            self._curves.append((g, r))
            self._visible.append(True)
            item = QListWidgetItem(_swatch(colors[i]), name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            item.setToolTip(name)
            self.layers.addItem(item)
        self.layers.blockSignals(False)

    def _place_marks(self) -> None:
        """✕ on a row above the curves at each NaN/Inf gradient, ○ on a row below them at each
        exactly zero one, in the layer's colour; the rows follow the curves' range as it grows.
        One item per layer and kind: a single style is drawn once and stamped (fast), where a
        style per point is rendered point by point."""
        rec = self.record
        grads = rec.grads
        finite = grads[np.isfinite(grads) & (grads > 0)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (1.0, 1.0)
        colors = layer_colors(len(rec.layers))
        for kind, bad, y in (
            ("nan", np.isnan(grads) | np.isinf(grads), hi * 10**0.5),
            ("zero", grads == 0, lo / 10**0.5),
        ):
            for i, row in enumerate(bad):
                steps = rec.steps[row] if self._visible[i] else rec.steps[:0]
                item = self._marks.get((kind, i))
                if item is None and steps.size:
                    item = self._marks[(kind, i)] = self.grad_plot.plot(
                        pen=None,
                        symbol="x" if kind == "nan" else "o",
                        symbolSize=10 if kind == "nan" else 7,
                        symbolPen=pg.mkPen(colors[i], width=1.5),
                        symbolBrush=pg.mkBrush(colors[i] if kind == "nan" else theme.PAPER),
                    )
                    item.setZValue(5)  # over the fired step's line, which is often at the same step
                    # a long run of zero steps: a symbol per pixel, not per step
                    item.setClipToView(True)
                    item.setDownsampling(auto=True, method="subsample")
                # the record only grows, so the same count on the same row is the same markers
                if item is not None and self._marked.get((kind, i)) != (steps.size, y):
                    self._marked[(kind, i)] = (steps.size, y)
                    item.setData(steps, np.full(steps.size, y))

    def _layer_toggled(self, item: QListWidgetItem) -> None:
        i = self.layers.row(item)
        on = self._visible[i] = item.checkState() == Qt.CheckState.Checked
        for c in self._curves[i]:
            c.setVisible(on)
        self._place_marks()

    def _remove_lines(self) -> None:
        for line in self._lines:
            vb = line.getViewBox()
            if vb is not None:
                vb.removeItem(line)
        self._lines = []

    def _place_lines(self) -> None:
        """The fired step's line (both plots, its label on top) and the diagnosed step's."""
        self._remove_lines()
        w = self.watch
        if w is not None and w.step is not None:
            color = condition_color(w.fired)
            for plot, label in ((self.grad_plot, f"{w.fired} · step {w.step:,}"), (self.ratio_plot, None)):
                line = pg.InfiniteLine(
                    pos=w.step,
                    angle=90,
                    pen=pg.mkPen(color, width=2),
                    label=label,
                    labelOpts={
                        "position": 0.6,
                        "color": color,
                        "fill": (255, 255, 255, 220),
                        "anchors": [(1, 0.5), (1, 0.5)],
                    },
                )
                plot.addItem(line, ignoreBounds=True)
                self._lines.append(line)
        if self.diagnosed is not None and (w is None or self.diagnosed != w.step):
            line = pg.InfiniteLine(
                pos=self.diagnosed,
                angle=90,
                pen=pg.mkPen(theme.SOFT_INK, width=1.5, style=Qt.PenStyle.DashLine),
                label=f"diagnosed · step {self.diagnosed:,}",
                labelOpts={
                    "position": 0.3,
                    "color": theme.TITLE_INK,
                    "fill": (255, 255, 255, 220),
                    "anchors": [(0, 0.5), (0, 0.5)],
                },
            )
            self.grad_plot.addItem(line, ignoreBounds=True)
            self._lines.append(line)

    def fired_step(self) -> int | None:
        """The step marked as the one a rule fired at (None: none fired, or still running)."""
        return self.watch.step if self.watch is not None else None

    def _update_header(self) -> None:
        rec, esc = self.record, html.escape
        n = rec.n
        last = f"step {int(rec.steps[-1]):,}" if n else "no step yet"
        what = esc(self.request.words()) if self.request else ""
        w = self.watch
        if self.running:
            text = f"<b>Watching for {what}</b> · {n:,} steps · {last}"
        elif w is not None and w.step is not None:
            color = condition_color(w.fired)
            text = (
                f"<b style='color:{color}'>{esc(str(w.fired))} at step {w.step:,}</b> ({esc(w.at)})"
                f" — {esc(w.detail)} · {w.steps:,} steps watched"
            )
        elif w is not None:
            text = (
                f"<b>No {esc(' or '.join(w.until))} in {w.steps:,} steps</b>: {esc(w.at)};"
                " nothing to diagnose"
            )
        elif self.ended:
            text = f"<b>Run {self.ended}</b> after {n:,} steps · {last}"
        else:
            text = ""
        if self.diagnosed is not None and not self.running:
            text += f" · showing step {self.diagnosed:,}"
        self.header.setText(text)

    # -- the mouse ----------------------------------------------------------------
    def step_at(self, scene_pos) -> int | None:
        """The recorded step under a point of the plots' scene (None: outside both plots)."""
        for plot in (self.grad_plot, self.ratio_plot):
            vb = plot.getViewBox()
            if vb.sceneBoundingRect().contains(scene_pos):
                i = self.record.index_of(vb.mapSceneToView(scene_pos).x())
                return None if i is None else int(self.record.steps[i])
        return None

    def step_menu(self, step: int) -> QMenu:
        """What a click at ``step`` offers."""
        menu = QMenu(self)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # one per click
        text = f"Diagnose step {step:,}" + (" (stops this run)" if self.running else "")
        act = menu.addAction(text)
        act.setStatusTip("Run the program again to that gradient step and show its graph; this record stays")
        act.triggered.connect(lambda: self.diagnoseRequested.emit(step))
        return menu

    def _clicked(self, ev) -> None:
        if ev.double():
            return
        step = self.step_at(ev.scenePos())
        if step is not None:
            ev.accept()
            self.step_menu(step).popup(ev.screenPos().toPoint())

    def _hovered(self, pos) -> None:
        step = self.step_at(pos)
        if step is None:
            return
        i = self.record.index_of(step)
        assert i is not None  # a step was found, so the record has rows
        rec = self.record
        shown = [(name, rec.grad(j)[i], rec.ratio(j)[i]) for j, name in enumerate(rec.layers)][:6]
        parts = [
            f"{html.escape(name)} {_fmt(g)} ({_fmt(MISSING if math.isnan(r) else r)})" for name, g, r in shown
        ]
        more = " …" if len(rec.layers) > len(shown) else ""
        self.readout.setText(
            f"step {step:,} — ‖gradient‖ (update/weight): "
            + " · ".join(parts)
            + more
            + " — click to diagnose this step"
        )


def _fmt(x: float) -> str:
    """A norm or ratio for the readout; "–" for one not reported (MISSING) or not computable.

    >>> _fmt(float("nan")), _fmt(0.0), _fmt(0.00123), _fmt(MISSING), _fmt(float("inf"))
    ('NaN', '0', '1.23e-03', '–', 'inf')
    """
    if math.isnan(x):
        return "NaN"
    if x < 0:
        return "–"
    if math.isinf(x):
        return "inf"
    return "0" if x == 0 else f"{x:.3g}" if 0.01 <= abs(x) < 1000 else f"{x:.2e}"


def _swatch(color: str) -> QIcon:
    pm = QPixmap(12, 12)
    pm.fill(QColor(color))
    return QIcon(pm)


class RunUntilDialog(QDialog):
    """Which conditions to watch for, and for how many steps at most; remembered (QSettings)."""

    def __init__(self, settings: QSettings, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Run until…")
        self.settings = settings
        saved = settings.value("watch/until", "nan,zero")
        chosen = set(str(saved).split(",")) if saved else {"nan"}
        form = QFormLayout(self)
        intro = QLabel(
            "Run the program, watching every gradient step, and stop before the first"
            " step where one of these holds; that step is diagnosed."
        )
        intro.setWordWrap(True)
        form.addRow(intro)
        self.boxes: dict[str, QCheckBox] = {}
        for name in CONDITIONS:
            label, words = CONDITION_WORDS[name]
            box = self.boxes[name] = QCheckBox(f"{label}: {words}")
            box.setChecked(name in chosen)
            box.toggled.connect(self._changed)
            form.addRow(box)
        self.all_box = QCheckBox("All of them")
        self.all_box.clicked.connect(self._all_clicked)
        form.addRow(self.all_box)
        self.zero_spin = QSpinBox()
        self.zero_spin.setRange(1, 1_000_000)
        self.zero_spin.setValue(_count(settings.value("watch/zero_steps"), ZERO_STEPS))
        self.zero_spin.setSuffix(" steps in a row")
        form.addRow("Zero for:", self.zero_spin)
        self.max_spin = QSpinBox()
        self.max_spin.setRange(0, 2_000_000_000)
        self.max_spin.setSpecialValueText("until the program ends")
        self.max_spin.setValue(_count(settings.value("watch/max_steps"), 0))
        self.max_spin.setToolTip("Stop after this many gradient steps even if nothing happened")
        form.addRow("At most:", self.max_spin)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.run_button = self.buttons.addButton("Run", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        self._changed()

    def _all_clicked(self, on: bool) -> None:
        for b in self.boxes.values():
            b.setChecked(on)

    def _changed(self) -> None:
        chosen = [n for n, b in self.boxes.items() if b.isChecked()]
        self.all_box.setChecked(len(chosen) == len(self.boxes))
        self.zero_spin.setEnabled("zero" in chosen)
        self.run_button.setEnabled(bool(chosen))

    def request(self) -> WatchRequest:
        until = tuple(n for n, b in self.boxes.items() if b.isChecked())
        return WatchRequest(
            until, self.max_spin.value() or None, self.zero_spin.value() if "zero" in until else None
        )

    def accept(self) -> None:
        r = self.request()
        self.settings.setValue("watch/until", ",".join(r.until))
        self.settings.setValue("watch/max_steps", r.max_steps or 0)
        self.settings.setValue("watch/zero_steps", self.zero_spin.value())
        super().accept()


def _count(value: object, default: int) -> int:
    """A whole number read back from QSettings (a string in some back ends), else ``default``."""
    try:
        return int(str(value))
    except ValueError:
        return default
