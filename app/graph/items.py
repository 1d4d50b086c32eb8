"""Graphics items of the graph view, cheap to paint.

Nodes are parented to clipping *tiles*: the view then skips a whole tile when
it is off screen instead of testing every item (a 20k-node repaint went from
232 to 76 ms with this). Edges are batched into one path item per tile and
style, so the scene holds hundreds of edge items, not tens of thousands.
Labels are dropped when zoomed out (level of detail).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QLinearGradient, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPathItem, QStyleOptionGraphicsItem

from .. import theme
from .palette import QUIET, STYLES, badge_text, category, magnitude_pen, worst

LOD_TEXT = 0.25
_FONT = QFont("Sans", 9)
_SMALL = QFont("Sans", 7)
#: a box's second line (``Dense → [32,64]``): at the default zoom 7.6 px, not 6.75, and
#: a Conv2DTranspose's output shape still fits a layer box
_SUBTITLE = QFont("Sans", 8)
_BOLD = QFont("Sans", 9, QFont.Weight.Bold)


class Tile(QGraphicsItem):
    """Invisible parent whose rect is the union of its children; clips so the view culls it whole."""

    def __init__(self, rect: QRectF):
        super().__init__()
        self._rect = rect
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemHasNoContents, True)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemClipsChildrenToShape, True)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        return self._rect

    def paint(self, painter, option, widget=None) -> None:  # ItemHasNoContents: never called
        pass


class NodeItem(QGraphicsItem):
    """An op, a variable, the target, or a collapsed group (with problem badges)."""

    def __init__(
        self,
        node_id: str,
        rect: QRectF,
        title: str,
        subtitle: str,
        *,
        kind: str,
        status: str = "passes",
        on_path: bool = True,
        badges: dict[str, int] | None = None,
        tooltip: str | Callable[[], str] = "",
    ):
        super().__init__()
        self.node_id = node_id
        self.kind = kind  # op | variable | target | group
        self._rect = QRectF(0, 0, rect.width(), rect.height())
        self.setPos(rect.topLeft())
        self.title, self.subtitle = title, subtitle
        self.status, self.on_path, self.badges = status, on_path, badges or {}
        self.highlight = False
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, True)
        self._lazy_tip = tooltip if callable(tooltip) else None
        if isinstance(tooltip, str):
            self.setToolTip(tooltip)
        cat = category(status)
        if kind == "target":
            self._fill, self._text = QColor(theme.INK), QColor("white")
        elif kind == "variable":
            self._fill, self._text = QColor(theme.VARIABLE_FILL), QColor(theme.VARIABLE_INK)
        elif kind == "group":
            self._fill, self._text = QColor(theme.GROUP_FILL), QColor(theme.INK_STRONG)
        else:
            self._fill, self._text = QColor("white"), QColor(theme.INK_STRONG)
        if not on_path and kind != "target":
            self._fill, self._text = QColor(theme.OFF_PATH_FILL), QColor(theme.OFF_PATH_NODE_INK)
        self._problem = cat not in QUIET
        self.starved = cat == "starved"
        self._border = QPen(
            QColor(STYLES[cat].color) if self._problem else QColor(theme.QUIET_LINE),
            3.0 if self._problem else 1.0,
        )
        if self._problem and STYLES[cat].dash:
            self._border.setDashPattern([max(1.0, d / 1.5) for d in STYLES[cat].dash])
        self._marker = STYLES[cat].marker if self._problem else ""
        if self.starved:  # no gradient arrives: muted, never a bug's style, never green
            self._border = QPen(QColor(STYLES[cat].color), 1.6)
            self._border.setDashPattern([3, 2])
            self._text = QColor(theme.STARVED_INK)
            self._fill = QColor(theme.STARVED_VARIABLE_FILL if kind == "variable" else theme.STARVED_FILL)
            self._marker = STYLES[cat].marker if kind == "variable" else ""
        # the colour a node keeps when zoomed out: its status, or its worst badge
        bad = [c for c in self.badges if c not in QUIET] if kind == "group" else []
        self.far_cat = cat if self._problem else worst(bad) if bad else ""
        if self.far_cat:
            self.setZValue(1)  # problems are drawn on top

    def tip(self) -> str:
        """The tooltip, made now if it was given as a function (the scene asks on hover)."""
        if self._lazy_tip is not None:
            self.setToolTip(self._lazy_tip())
            self._lazy_tip = None
        return self.toolTip()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        return self._rect.adjusted(-3, -3, 3, 3)

    def paint(self, painter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        r = self._rect
        sel = self.isSelected() or self.highlight
        if lod < LOD_TEXT:
            painter.fillRect(
                r,
                QColor(theme.SELECTION_FILL)
                if sel
                else QColor(STYLES[self.far_cat].color)
                if self.far_cat
                else self._fill.darker(115),
            )
            return
        painter.setBrush(self._fill)
        painter.setPen(QPen(QColor(theme.SELECTION_LINE), 3.5) if sel else self._border)
        if self.kind == "group":
            painter.drawRoundedRect(r, 6, 6)
            painter.drawRoundedRect(r.adjusted(3, 3, -3, -3), 4, 4)
        elif self.kind == "variable":
            painter.drawRoundedRect(r, r.height() / 2, r.height() / 2)
        else:
            painter.drawRoundedRect(r, 4, 4)
        if sel:
            painter.setPen(QPen(QColor(theme.SELECTION_RING), 1.5))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(r.adjusted(-3, -3, 3, 3), 6, 6)
        painter.setPen(self._text)
        painter.setFont(_BOLD if self.kind in ("group", "target") else _FONT)
        tr = r.adjusted(8, 3, -22 if self._marker else -8, -r.height() / 2)
        painter.drawText(
            tr,
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom,
            path_elided(self.title, QFontMetricsF(painter.font()), tr.width()),
        )
        painter.setFont(_SUBTITLE)
        sr = r.adjusted(8, r.height() / 2 + 1, -8, -2)
        painter.drawText(
            sr,
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
            subtitle_elided(self.subtitle, QFontMetricsF(painter.font()), sr.width()),
        )
        if self._marker:
            painter.setPen(self._border.color())
            painter.setFont(_BOLD)
            painter.drawText(
                QRectF(r.right() - 22, r.top() + 2, 20, 16), Qt.AlignmentFlag.AlignCenter, self._marker
            )
        if self.badges:
            x = r.right() - 6
            painter.setFont(_SMALL)
            for cat, n in sorted(self.badges.items()):
                bw = 26
                x -= bw
                br = QRectF(x, r.bottom() - 17, bw - 3, 13)
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(QColor(STYLES[cat].color))
                painter.drawRoundedRect(br, 6, 6)
                painter.setPen(
                    QColor("black") if cat in ("off_path", "zero", "starved", "muted") else QColor("white")
                )
                painter.drawText(br, Qt.AlignmentFlag.AlignCenter, badge_text(cat, n))


def subtitle_elided(subtitle: str, fm: QFontMetricsF, width: float) -> str:
    """A box's second line within ``width``: what it hands on (``→ [1,80,64]``) stays whole
    and the class or op type before it is shortened (``TokenAndPositi… → [1,80,64]``): two
    layers of one class differ by their shapes. Where not even the shape fits, the line is
    cut at its end as any text is."""
    if fm.horizontalAdvance(subtitle) <= width:
        return subtitle
    head, arrow, tail = subtitle.partition(" → ")
    keep = arrow + tail
    room = width - fm.horizontalAdvance(keep)
    if arrow and room >= fm.horizontalAdvance("Ab…"):
        return fm.elidedText(head, Qt.TextElideMode.ElideRight, room) + keep
    return fm.elidedText(subtitle, Qt.TextElideMode.ElideRight, width)


def path_elided(title: str, fm: QFontMetricsF, width: float) -> str:
    """``title`` within ``width``, a Python path losing its head first: the variable's own
    name (``trainable_variables[0]``, ``weights2``) is what tells two boxes apart, so it
    stays whole while anything of the path before it fits (``model.lay…trainable_variables[0]``)."""
    if fm.horizontalAdvance(title) <= width:
        return title
    cut = max(title.rfind("."), title.rfind("/")) + 1
    head, tail = title[:cut], title[cut:]
    room = width - fm.horizontalAdvance(tail)
    if head and room >= fm.horizontalAdvance("…"):
        return fm.elidedText(head, Qt.TextElideMode.ElideRight, room) + tail
    return fm.elidedText(title, Qt.TextElideMode.ElideMiddle, width)


def frame_title(title: str, width: float, metrics: QFontMetricsF | None = None) -> str:
    """An open group's title within ``width``: whole; else without its op count (the name
    is what the user looks for); else the name elided in the middle, never cut mid-glyph
    at the frame's edge."""
    fm = metrics or QFontMetricsF(_BOLD)
    for text in ("▾ " + title, "▾ " + title.split("  ·  ")[0]):
        if fm.horizontalAdvance(text) <= width:
            return text
    return fm.elidedText("▾ " + title.split("  ·  ")[0], Qt.TextElideMode.ElideMiddle, width)


class FrameItem(QGraphicsItem):
    """The box of an expanded group (function body or name scope)."""

    def __init__(self, group_id: str, rect: QRectF, title: str, is_function: bool):
        super().__init__()
        self.group_id = group_id
        self._rect = QRectF(0, 0, rect.width(), rect.height())
        self.setPos(rect.topLeft())
        self.title = title
        self.setZValue(-10)
        self._fill = QColor(250, 246, 236) if is_function else QColor(242, 245, 249)
        self._pen = QPen(QColor(theme.FUNCTION_FRAME) if is_function else QColor(theme.SCOPE_FRAME), 1.2)
        if not is_function:
            self._pen.setStyle(Qt.PenStyle.DashLine)
        self.setToolTip(f"{title} — double-click the title to collapse")
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        return self._rect.adjusted(-1, -1, 1, 1)

    def title_rect(self) -> QRectF:
        return QRectF(0, 0, self._rect.width(), 22)

    def paint(self, painter, option, widget=None) -> None:
        painter.setPen(self._pen)
        painter.setBrush(self._fill)
        painter.drawRoundedRect(self._rect, 8, 8)
        if option.levelOfDetailFromTransform(painter.worldTransform()) >= LOD_TEXT * 0.6:
            painter.setPen(QColor(theme.SOFT_INK))
            painter.setFont(_BOLD)
            box = self._rect.adjusted(10, 3, -10, 0)
            painter.drawText(
                box,
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                frame_title(self.title, box.width()),
            )


class EdgeBatch(QGraphicsPathItem):
    """Many edges of one style drawn as a single path (no per-edge items)."""

    def __init__(self, path: QPainterPath, pen: QPen, z: float):
        super().__init__(path)
        self.setPen(pen)
        self.setBrush(QBrush(Qt.BrushStyle.NoBrush))
        self.setZValue(z)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, False)


class ProblemMarks(QGraphicsItem):
    """Zoomed out, each problem op (or group holding one) as a patch in its status colour,
    at least :data:`MIN_PX` pixels wide whatever the zoom, drawn above everything else:
    the broken ops never vanish into the grey of a fitted view."""

    MIN_PX = 9.0

    def __init__(self, marks: list[tuple[QRectF, str]]):
        super().__init__()
        self.marks = marks
        self._rect = QRectF()
        for r, _ in marks:
            self._rect = self._rect.united(r)
        self.setZValue(20)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self._colors = {c: QColor(STYLES[c].color) for _, c in marks}
        self._margin = 0.0

    def set_scale(self, scale: float) -> None:
        """Grow the bounding rect with the patches' size at this zoom (the view calls it)."""
        m = self.MIN_PX / max(scale, 1e-4)
        if abs(m - self._margin) > 1e-6:
            self.prepareGeometryChange()
            self._margin = m

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        m = self._margin
        return self._rect.adjusted(-m, -m, m, m)

    def paint(self, painter, option, widget=None) -> None:
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        if lod >= LOD_TEXT or lod <= 0:
            return
        m = self.MIN_PX / lod
        painter.setPen(QPen(QColor("white"), 1.0 / lod))
        for r, c in self.marks:
            w, h = max(r.width(), m), max(r.height(), m)
            painter.setBrush(self._colors[c])
            painter.drawRect(QRectF(r.center().x() - w / 2, r.center().y() - h / 2, w, h))


def paint_ramp(painter, rect: QRectF, lo: float, hi: float) -> None:
    """The magnitude overlay's colours from log10 norm ``lo`` (left) to ``hi`` (right): the
    view's corner scale and an exported image's legend draw the same strip."""
    ramp = QLinearGradient(rect.topLeft(), rect.topRight())
    for i in range(11):
        ramp.setColorAt(i / 10, magnitude_pen(10 ** (lo + (hi - lo) * i / 10), lo, hi).color())
    painter.fillRect(rect, ramp)
