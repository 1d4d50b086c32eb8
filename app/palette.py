"""Edge/node status styles: Okabe-Ito colours (colour-blind safe) plus a second cue.

Each legend category has its own colour *and* dash pattern and marker glyph, so
the graph stays readable in greyscale or for any kind of colour blindness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPen

from tfviz.report import RAISING_KINDS


@dataclass(frozen=True)
class Style:
    key: str
    label: str
    color: str
    dash: tuple[float, ...]  # () = solid
    width: float
    marker: str  # glyph drawn mid-edge; "" = none


STYLES: dict[str, Style] = {
    s.key: s
    for s in (
        Style("passes", "passes (gradient flows)", "#009E73", (), 1.6, ""),
        Style("raises", "raises (tape.gradient fails)", "#D55E00", (4, 1.5, 1, 1.5), 2.6, "✕"),
        Style("cut", "cut (no gradient: kind)", "#E69F00", (5, 3), 2.2, "//"),
        Style("stop_gradient", "stop_gradient", "#0072B2", (1, 2), 2.0, "⊘"),
        Style("integer", "integer (not differentiable dtype)", "#CC79A7", (6, 2, 1, 2, 1, 2), 1.6, "ℤ"),
        Style("nan", "NaN / Inf gradient", "#000000", (2, 1), 2.4, "!"),
        Style("off_path", "off-path (no variable→target path)", "#BBBBBB", (), 1.0, ""),
    )
}


def category(status: str | None) -> str:
    """Map an edge/op status (passes, off_path or a kind) to a legend category."""
    if not status or status == "passes":
        return "passes"
    if status == "off_path":
        return "off_path"
    if status in RAISING_KINDS:
        return "raises"
    if status in ("stop_gradient", "integer", "nan"):
        return status
    return "cut"


#: Worst first: when several edges merge into one drawn edge, the worst wins.
SEVERITY = ("raises", "nan", "cut", "stop_gradient", "integer", "passes", "off_path")


def worst(statuses) -> str:
    cats = {category(s): s for s in statuses}
    for c in SEVERITY:
        if c in cats:
            return cats[c]
    return "off_path"


_PENS: dict[str, QPen] = {}


def pen_for(status: str) -> QPen:
    cat = category(status)
    pen = _PENS.get(cat)
    if pen is None:
        st = STYLES[cat]
        pen = QPen(QColor(st.color), st.width)
        pen.setCosmetic(False)
        pen.setCapStyle(Qt.FlatCap)
        if st.dash:
            pen.setDashPattern(list(st.dash))
        _PENS[cat] = pen
    return pen


def magnitude_pen(grad_norm: float | None, lo: float, hi: float) -> QPen:
    """Gradient-magnitude overlay: width and colour grow with log10(norm)."""
    if grad_norm is None or not math.isfinite(grad_norm) or grad_norm <= 0:
        pen = QPen(QColor("#CCCCCC"), 1.0)
        pen.setDashPattern([2, 2])
        return pen
    t = 0.5 if hi <= lo else min(1.0, max(0.0, (math.log10(grad_norm) - lo) / (hi - lo)))
    # cividis-like ramp (blue -> yellow), legible for colour-blind readers
    r, g, b = int(0 + 255 * t), int(32 + 200 * t), int(77 * (1 - t) + 30 * t)
    return QPen(QColor(r, g, b), 1.0 + 5.0 * t)


STATUS_ICON_COLOR = {"connected": "#009E73", "disconnected": "#E69F00", "broken": "#D55E00"}
