"""The minimap's pictures of the whole graph, drawn once per rebuild (or change of scale).

The scene is never rendered: node rectangles, group frames and edge batches are drawn
into one image, a few C++ calls per colour. The target and the problem ops go on a second,
transparent image in their status colours, enlarged to :data:`MIN_MARK` pixels so one broken
op shows at any scale, and the minimap draws it over its shade of what is out of view.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from PySide6.QtCore import QPointF, QRectF, QSize, QSizeF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPen
from PySide6.QtWidgets import QGraphicsPathItem

from .. import theme
from .items import FrameItem
from .palette import STYLES

#: Problem ops are drawn at least this many pixels wide, whatever the graph's size.
MIN_MARK = 7.0
#: The target (the loss) is drawn at least this big: where the gradient starts.
MIN_TARGET = 5.0
MARGIN = 6.0
#: Node fills by kind (problem ops are drawn over them in their status colour).
FILLS = {
    "op": theme.OVERVIEW_OP,
    "group": theme.OVERVIEW_GROUP,
    "variable": theme.OVERVIEW_VARIABLE,
    "target": theme.INK,
    "off_path": theme.OVERVIEW_OFF_PATH,
    "starved": STYLES["starved"].color,
}
#: Group frames (fill, outline) as the main view draws them: function bodies cream, scopes grey-blue.
FRAMES = {"function": theme.OVERVIEW_FUNCTION, "scope": theme.OVERVIEW_SCOPE}


@dataclass
class Overview:
    image: QImage
    top: QImage | None  # the target and the problem ops, drawn over the shade
    size: QSizeF  # in widget pixels, margins included
    marks: list[tuple[QRectF, str]] = field(default_factory=list)  # problem ops, scene rects


def draw_overview(view, scene_rect: QRectF, s: float, dpr: float) -> Overview:
    """The graph in ``scene_rect`` at scale ``s`` (widget pixels per scene unit)."""
    sr = scene_rect
    size = QSizeF(sr.width() * s + 2 * MARGIN, sr.height() * s + 2 * MARGIN)
    px = QSize(max(1, math.ceil(size.width() * dpr)), max(1, math.ceil(size.height() * dpr)))
    img = QImage(px, QImage.Format.Format_ARGB32_Premultiplied)
    img.setDevicePixelRatio(dpr)
    img.fill(QColor(theme.PAPER))
    out = Overview(img, None, size)
    if not view.node_items:
        return out
    h = view.hierarchy
    p = QPainter(img)
    p.translate(MARGIN - sr.left() * s, MARGIN - sr.top() * s)
    p.scale(s, s)
    frames = [
        (
            f.sceneBoundingRect(),
            "function"
            if h is not None and f.group_id in h.groups and h.groups[f.group_id].kind == "function"
            else "scope",
        )
        for f in view.scene().items()
        if isinstance(f, FrameItem)
    ]
    for r, kind in sorted(frames, key=lambda rk: -rk[0].width() * rk[0].height()):  # outer first
        fill, line = FRAMES[kind]
        p.setPen(QPen(QColor(line), 0))  # width 0: one pixel, whatever the scale
        p.setBrush(QColor(fill))
        p.drawRect(r)
    p.setOpacity(0.55)
    for it in view.scene().items():  # edge batches: one path per tile and style
        if isinstance(it, QGraphicsPathItem) and it.pen().style() != Qt.PenStyle.NoPen and it.isVisible():
            p.setPen(QPen(it.pen().color(), 0))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawPath(it.path())
    p.setOpacity(1.0)
    p.setPen(Qt.PenStyle.NoPen)
    rects: dict[str, list[QRectF]] = {}
    target = None
    for it in view.node_items.values():
        r = it.sceneBoundingRect()
        if it.far_cat:  # drawn on top, enlarged
            out.marks.append((r, it.far_cat))
        if it.kind == "target":
            target = r
        key = it.kind if it.on_path else "off_path"
        if getattr(it, "starved", False):
            key = "starved"
        rects.setdefault(key, []).append(r)
    for key, rs in rects.items():
        p.setBrush(QColor(FILLS.get(key, FILLS["op"])))
        p.drawRects(rs)
    p.end()
    top = QImage(img.size(), QImage.Format.Format_ARGB32_Premultiplied)
    top.setDevicePixelRatio(dpr)
    top.fill(Qt.GlobalColor.transparent)
    p = QPainter(top)

    def square(r: QRectF, least: float, color: QColor) -> None:
        c = QPointF((r.center().x() - sr.left()) * s + MARGIN, (r.center().y() - sr.top()) * s + MARGIN)
        w, hh = max(r.width() * s, least), max(r.height() * s, least)
        p.setPen(QPen(QColor("white"), 1.0))
        p.setBrush(color)
        p.drawRect(QRectF(c.x() - w / 2, c.y() - hh / 2, w, hh))

    if target is not None:
        square(target, MIN_TARGET, QColor(FILLS["target"]))
    for r, cat in out.marks:
        square(r, MIN_MARK, QColor(STYLES[cat].color))
    p.end()
    out.top = top
    return out
