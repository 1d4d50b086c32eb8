"""Edge/node status styles: Okabe-Ito colours (colour-blind safe) plus a second cue.

Each legend category has its own colour *and* dash pattern and marker glyph, so
the graph stays readable in greyscale or for any kind of colour blindness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRect, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPen, QPixmap

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
        Style("zero", "zero (warning: the gradient is exactly 0 at these values)", "#56B4E9", (8, 2), 2.4,
              "0"),
        Style("vanishing", "vanishing (warning: the gradient arrives, over 5 decades smaller than near"
              " the loss)", "#3F5FB0", (), 2.4, "↓"),
        Style("exploding", "exploding (warning: the gradient arrives, over 5 decades larger than near"
              " the loss)", "#A6266E", (), 2.4, "↑"),
        Style("not_trained", "not trained (the loss reads it, but the step never updates it)", "#B59A00",
              (6, 2, 2, 2), 2.4, "↺"),
        Style("starved", "no gradient (none arrives here: cut further toward the target)", "#A89F91",
              (3, 3), 1.4, "∅"),
        Style("muted", "harmless cut (no variable needs it: BatchNorm moments, shape arithmetic)",
              "#9AA3AD", (1, 3), 1.2, ""),
        Style("off_path", "off-path (no variable→target path)", "#BBBBBB", (), 1.0, ""),
    )
}


def category(status: str | None) -> str:
    """Map an edge/op status (passes, off_path or a kind) to a legend category."""
    if not status or status == "passes":
        return "passes"
    if status in ("off_path", "starved", "muted"):
        return status
    if status == "cancelled":  # information: nothing after the layer lets it train, by design
        return "muted"
    if status in RAISING_KINDS:
        return "raises"
    if status in ("stop_gradient", "integer", "nan", "zero", "vanishing", "exploding", "not_trained"):
        return status
    return "cut"


#: Worst first: when several edges merge into one drawn edge, the worst wins. A gradient
#: that passes outranks one that never arrives, and a harmless cut ranks below both.
SEVERITY = ("raises", "nan", "cut", "not_trained", "stop_gradient", "integer", "zero", "exploding",
            "vanishing", "passes",
            "starved", "muted", "off_path")
#: Categories that mark a bug (or a warning) where they are drawn.
QUIET = frozenset({"passes", "off_path", "starved", "muted"})


def look(edge) -> str:
    """The status an edge is drawn with: its own, except that a cut no variable needs is
    ``muted`` (BatchNorm's moments are not a bug)."""
    if edge.status not in ("passes", "off_path", "starved") and not getattr(edge, "needed", True):
        return "muted"
    return edge.status


def worst(statuses) -> str:
    """The status of a merged edge: the worst of its on-path members (an off-path member,
    such as shape arithmetic beside a real path, never colours it).

    >>> worst(["passes", "integer"]), worst(["passes", "off_path"]), worst(["starved", "passes"])
    ('integer', 'passes', 'passes')
    """
    statuses = list(statuses)
    on = [s for s in statuses if s != "off_path"] or statuses
    cats = {category(s): s for s in on}
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
        pen.setCapStyle(Qt.PenCapStyle.FlatCap)
        if st.dash:
            pen.setDashPattern(list(st.dash))
        _PENS[cat] = pen
    return pen


#: edge statuses along which a gradient arrives: the only ones with a magnitude to draw
CARRIES = frozenset({"passes", "zero"})


def carried_norm(edge) -> float | None:
    """The gradient norm ``edge`` carries back, or None where no gradient arrives along it.

    A norm belongs to a tensor, not to an edge: a tensor read by a starved op has the norm
    its other readers give it, and drawing it there would show a gradient where none goes.
    """
    return edge.grad_norm if edge.status in CARRIES else None


#: The overlay's pen for an edge along which the gradient arrives but has no measured norm: a
#: tensor inside a loop or branch body is out of the tape's reach.
UNMEASURED_COLOR = "#6F7F96"
#: ... and for one along which no gradient arrives at all.
NO_GRADIENT_COLOR = "#CCCCCC"


def magnitude_pen(grad_norm: float | None, lo: float, hi: float, arrives: bool = False) -> QPen:
    """Gradient-magnitude overlay: width and colour grow with log10(norm). Without a norm, a
    dotted slate line where the gradient ``arrives`` unmeasured, light grey dashes where none
    arrives, so "not measured" never reads as "no gradient"."""
    if grad_norm is None or not math.isfinite(grad_norm) or grad_norm <= 0:
        if arrives:
            pen = QPen(QColor(UNMEASURED_COLOR), 1.4)
            pen.setDashPattern([1, 2.5])
            return pen
        pen = QPen(QColor(NO_GRADIENT_COLOR), 1.0)
        pen.setDashPattern([2, 2])
        return pen
    t = 0.5 if hi <= lo else min(1.0, max(0.0, (math.log10(grad_norm) - lo) / (hi - lo)))
    # cividis-like ramp (blue -> yellow), legible for colour-blind readers
    r, g, b = int(0 + 255 * t), int(32 + 200 * t), int(77 * (1 - t) + 30 * t)
    return QPen(QColor(r, g, b), 1.0 + 5.0 * t)


STATUS_ICON_COLOR = {"connected": "#009E73", "disconnected": "#E69F00", "broken": "#D55E00",
                     "nan": "#000000", "zero": "#56B4E9", "not_trained": "#B59A00",
                     "vanishing": "#3F5FB0", "exploding": "#A6266E", "cancelled": "#98A9BC",
                     "read_not_trained": "#B8B8B8"}
#: Colours for text on white where the line colour is too light to read (sky blue: 2.2:1).
TEXT_COLOR = {"zero": "#1F6FA3", "cancelled": "#5F6B76", "not_trained": "#7A6800",
              "read_not_trained": "#8A8A8A", "starved": "#6B645A", "muted": "#5F6B76"}


def text_color(key: str) -> str:
    """The colour for words in the style of ``key`` (a legend category or a variable look)."""
    return TEXT_COLOR.get(key) or STATUS_ICON_COLOR.get(key) or STYLES.get(key, STYLES["passes"]).color


def variable_look(status: str, kind: str | None, magnitude: str | None = None) -> str:
    """How a variable is shown: its status, except that a connected variable whose
    gradient is NaN, exactly zero, vanishing or exploding is never shown as a plain
    "connected" tick.

    A variable the step never updates (``not_trained``) has its own look, whatever its status.

    >>> variable_look("connected", None), variable_look("connected", "zero"), variable_look("broken", "nan")
    ('connected', 'zero', 'broken')
    >>> variable_look("disconnected", "not_trained"), variable_look("connected", "not_trained")
    ('not_trained', 'not_trained')
    >>> variable_look("connected", None, "vanishing")
    'vanishing'
    """
    if kind == "not_trained":
        return kind
    if status == "connected" and kind is None and magnitude:
        return magnitude
    return kind if status == "connected" and kind in ("nan", "zero") else status


def badge_text(cat: str, n: int) -> str:
    """A group's problem badge: the marker then the count ("0·2" where the marker is a digit)."""
    marker = STYLES[cat].marker
    return f"{marker}·{n}" if marker[-1:].isdigit() else f"{marker}{n}"


_ICONS: dict[str, QIcon] = {}


def status_icon(status: str) -> QIcon:
    """A dot in the status colour with a glyph (✓, –, ✕, 0, !) so it also reads without colour.

    ``status`` is a :func:`~app.graph.palette.variable_look`: a zero or NaN gradient is never a tick."""
    icon = _ICONS.get(status)
    if icon is None:
        pm = QPixmap(28, 28)
        pm.fill(Qt.GlobalColor.transparent)
        p = QPainter(pm)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(STATUS_ICON_COLOR.get(status, "#777777")))
        p.drawEllipse(2, 2, 24, 24)
        pen = QPen(QColor("white"), 3.2)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        p.setPen(pen)
        if status in ("zero", "nan"):
            f = QFont()
            f.setPixelSize(19)
            f.setBold(True)
            p.setFont(f)
            p.setPen(QColor("#0B2A40" if status == "zero" else "white"))  # dark on sky blue: 8:1
            p.drawText(QRect(2, 1, 24, 25), Qt.AlignmentFlag.AlignCenter, "0" if status == "zero" else "!")
        elif status in ("not_trained", "read_not_trained"):
            f = QFont("DejaVu Sans")
            f.setPixelSize(19 if status == "not_trained" else 16)
            f.setBold(True)
            p.setFont(f)
            p.setPen(QColor("white"))
            p.drawText(QRect(2, 1, 24, 25), Qt.AlignmentFlag.AlignCenter,
                       "↺" if status == "not_trained" else "R")
        elif status in ("vanishing", "exploding", "cancelled"):
            f = QFont("DejaVu Sans")
            f.setPixelSize(19)
            f.setBold(True)
            p.setFont(f)
            p.setPen(QColor("white"))
            p.drawText(QRect(2, 1, 24, 25), Qt.AlignmentFlag.AlignCenter,
                       {"vanishing": "↓", "exploding": "↑", "cancelled": "≈"}[status])
        elif status == "connected":
            p.drawPolyline([QPointF(8, 14.5), QPointF(12.5, 19), QPointF(20, 9.5)])
        elif status == "disconnected":
            p.drawLine(QPointF(8, 14), QPointF(20, 14))
        else:
            p.drawLine(QPointF(9, 9), QPointF(19, 19))
            p.drawLine(QPointF(19, 9), QPointF(9, 19))
        p.end()
        icon = _ICONS[status] = QIcon(pm)
    return icon
