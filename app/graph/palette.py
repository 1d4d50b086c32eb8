"""The status styles of :mod:`tfviz.palette` as Qt draws them: pens, the magnitude overlay's
ramp, and the status icons."""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRect, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPen, QPixmap

from tfviz.palette import (
    CARRIES,
    NO_GRADIENT_COLOR,
    QUIET,
    SEVERITY,
    STATUS_ICON_COLOR,
    STYLES,
    TEXT_COLOR,
    UNMEASURED_COLOR,
    Style,
    badge_text,
    carried_norm,
    category,
    look,
    text_color,
    variable_look,
    worst,
)

__all__ = [
    "CARRIES",
    "NO_GRADIENT_COLOR",
    "QUIET",
    "SEVERITY",
    "STATUS_ICON_COLOR",
    "STYLES",
    "TEXT_COLOR",
    "UNMEASURED_COLOR",
    "Style",
    "badge_text",
    "carried_norm",
    "category",
    "look",
    "magnitude_pen",
    "pen_for",
    "status_icon",
    "text_color",
    "variable_look",
    "worst",
]


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
            p.drawText(
                QRect(2, 1, 24, 25), Qt.AlignmentFlag.AlignCenter, "↺" if status == "not_trained" else "R"
            )
        elif status in ("vanishing", "exploding", "cancelled"):
            f = QFont("DejaVu Sans")
            f.setPixelSize(19)
            f.setBold(True)
            p.setFont(f)
            p.setPen(QColor("white"))
            p.drawText(
                QRect(2, 1, 24, 25),
                Qt.AlignmentFlag.AlignCenter,
                {"vanishing": "↓", "exploding": "↑", "cancelled": "≈"}[status],
            )
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
