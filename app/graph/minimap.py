"""The Overview dock's minimap: the whole graph small, the part in view outlined.

Zoomed far out, the main view shows long models as a strip (ResNet50 at Fit: 0.5 %),
so the minimap is where the user sees the whole and where the broken ops sit.

It is cheap on 20,000-node graphs because it never renders the scene: once per
rebuild of the view it draws the node rectangles (read from ``view.node_items``),
the group frames and the edge batches into a cached image, a handful of C++ calls per
colour. Problem ops are then drawn on top in their status colour, enlarged to
:data:`MIN_MARK` pixels, so a single broken op stays visible at any scale. Scrolling
and zooming only repaint the viewport rectangle over the cached image.

A rebuild is noticed without any hook in the view: every rebuild replaces the view's
``node_items`` dict, and the scene emits ``changed`` after it, so the minimap redraws
its image when that dict (or the scene rect) is no longer the one it drew.

Clicking or dragging in the minimap centres the main view there; with the keyboard
focus on it, the arrow keys pan the main view by a tenth of its width or height.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsPathItem, QSizePolicy, QWidget

from app.graph.items import FrameItem
from app.graph.palette import STYLES

#: Problem ops are drawn at least this many pixels wide, whatever the graph's size.
MIN_MARK = 7.0
#: The target (the loss) is drawn at least this big: where the gradient starts.
MIN_TARGET = 5.0
MARGIN = 6.0
EMPTY_TEXT = ("The whole graph appears here, small, once a script is analysed: problem ops"
              " in their colours, the part shown in the graph outlined. Click or drag to go there.")
#: Node fills by kind (problem ops are drawn over them in their status colour).
FILLS = {"op": "#9AA5B1", "group": "#7F8C99", "variable": "#6FA3C8", "target": "#303030",
         "off_path": "#D3D8DE", "starved": STYLES["starved"].color}
#: Group frames (fill, outline) as the main view draws them: function bodies cream, scopes grey-blue.
FRAMES = {"function": ("#FAF6EC", "#CDBB8E"), "scope": ("#F2F5F9", "#B4BEC8")}
VIEW_PEN = QColor("#1A1A1A")
#: Outside the part in view, the minimap is shaded.
SHADE = QColor(40, 50, 60, 34)


class Minimap(QWidget):
    """An overview of ``view`` (a GraphView), kept in step with it."""

    def __init__(self, view, parent=None):
        super().__init__(parent)
        self.view = view
        self.setMinimumSize(120, 90)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)
        self.setFocusPolicy(Qt.StrongFocus)
        self.setCursor(Qt.PointingHandCursor)
        self.setToolTip("Overview: click or drag to move the graph view; arrow keys pan it")
        self.setAccessibleName("Graph overview")
        self.renders = 0  # how many times the cached image was drawn (tests check it stays cached)
        self.paints = 0  # how many times the widget was painted (tests check a scroll repaints it)
        self._image: QImage | None = None  # the graph, small
        self._top: QImage | None = None  # the target and the problem ops, drawn over the shade
        self._drawn_items = None  # the view's node_items dict the image shows
        self._drawn_rect = QRectF()
        self._scale, self._offset = 1.0, QPointF()
        self._marks: list[tuple[QRectF, str]] = []  # problem ops, in widget coordinates
        self._dragging = False
        self._refresh = QTimer(self, singleShot=True, interval=30)
        self._refresh.timeout.connect(self._check)
        view.scene().changed.connect(lambda *_: self._refresh.start())
        view.scene().sceneRectChanged.connect(lambda *_: self._refresh.start())
        for bar in (view.horizontalScrollBar(), view.verticalScrollBar()):
            bar.valueChanged.connect(self.update)
            bar.rangeChanged.connect(self.update)
        view.viewport().installEventFilter(self)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(260, 200)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() == event.Type.Resize:  # the view's window on the scene changed size
            self.update()
        return False

    # -- geometry -----------------------------------------------------------------
    def is_empty(self) -> bool:
        return not self.view.node_items

    def map_from_scene(self, p: QPointF) -> QPointF:
        """A scene point's position in the minimap."""
        return QPointF(p.x() * self._scale + self._offset.x(), p.y() * self._scale + self._offset.y())

    def map_to_scene(self, p: QPointF) -> QPointF:
        s = self._scale or 1.0
        return QPointF((p.x() - self._offset.x()) / s, (p.y() - self._offset.y()) / s)

    def viewport_rect(self) -> QRectF:
        """The part of the scene the main view shows, in minimap coordinates."""
        v = self.view
        r = v.mapToScene(v.viewport().rect()).boundingRect()
        a, b = self.map_from_scene(r.topLeft()), self.map_from_scene(r.bottomRight())
        return QRectF(a, b)

    def _graph_rect(self) -> QRectF:
        """The scene rect, in minimap coordinates."""
        sr = self.view.scene().sceneRect()
        return QRectF(self.map_from_scene(sr.topLeft()), self.map_from_scene(sr.bottomRight()))

    def _fit(self) -> None:
        """Scale and offset that fit the scene rect in the widget, centred."""
        sr = self.view.scene().sceneRect()
        w, h = self.width() - 2 * MARGIN, self.height() - 2 * MARGIN
        if sr.isEmpty() or w <= 0 or h <= 0:
            self._scale, self._offset = 1.0, QPointF()
            return
        s = min(w / sr.width(), h / sr.height())
        self._scale = s
        self._offset = QPointF(MARGIN + (w - sr.width() * s) / 2 - sr.left() * s,
                               MARGIN + (h - sr.height() * s) / 2 - sr.top() * s)

    # -- the cached image ---------------------------------------------------------
    def _check(self) -> None:
        """Redraw the image if the view was rebuilt since it was drawn; else just repaint."""
        if self._stale():
            self._image = None
        self.update()

    def _stale(self) -> bool:
        return (self._image is None or self.view.node_items is not self._drawn_items
                or self.view.scene().sceneRect() != self._drawn_rect)

    def refresh(self) -> None:
        """Draw the image again now (the view was rebuilt, or the widget resized)."""
        self._image = None
        self._render()
        self.update()

    def resizeEvent(self, e) -> None:  # noqa: N802 - Qt's name
        self._image = None
        super().resizeEvent(e)

    def _render(self) -> None:
        v = self.view
        self.renders += 1
        self._drawn_items, self._drawn_rect = v.node_items, QRectF(v.scene().sceneRect())
        self._fit()
        dpr = self.devicePixelRatioF()
        img = QImage(QSize(max(1, int(self.width() * dpr)), max(1, int(self.height() * dpr))),
                     QImage.Format_ARGB32_Premultiplied)
        img.setDevicePixelRatio(dpr)
        img.fill(QColor("#FFFFFF"))
        self._image, self._marks, self._top = img, [], None
        if not v.node_items:
            return
        s = self._scale
        p = QPainter(img)
        p.translate(self._offset)
        p.scale(s, s)
        frames = [(f.sceneBoundingRect(), self._frame_kind(f.group_id))
                  for f in v.scene().items() if isinstance(f, FrameItem)]
        for r, kind in sorted(frames, key=lambda rk: -rk[0].width() * rk[0].height()):  # outer first
            fill, line = FRAMES[kind]
            p.setPen(QPen(QColor(line), 0))  # width 0: one pixel, whatever the scale
            p.setBrush(QColor(fill))
            p.drawRect(r)
        p.setOpacity(0.55)
        for it in v.scene().items():  # edge batches: one path per tile and style
            if isinstance(it, QGraphicsPathItem) and it.pen().style() != Qt.NoPen and it.isVisible():
                pen = QPen(it.pen().color(), 0)
                p.setPen(pen)
                p.setBrush(Qt.NoBrush)
                p.drawPath(it.path())
        p.setOpacity(1.0)
        p.setPen(Qt.NoPen)
        rects: dict[str, list[QRectF]] = {}
        target = None
        for it in v.node_items.values():
            r = it.sceneBoundingRect()
            if it.far_cat:  # drawn on top, enlarged
                self._marks.append((r, it.far_cat))
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
        # the target and the problem ops go on a layer of their own, drawn over the shade
        top = QImage(img.size(), QImage.Format_ARGB32_Premultiplied)
        top.setDevicePixelRatio(dpr)
        top.fill(Qt.transparent)
        p = QPainter(top)
        if target is not None:
            self._square(p, target, MIN_TARGET, QColor(FILLS["target"]))
        for r, cat in self._marks:
            self._square(p, r, MIN_MARK, QColor(STYLES[cat].color))
        p.end()
        self._top = top

    def _frame_kind(self, gid: str) -> str:
        h = self.view.h
        return "function" if h is not None and gid in h.groups and h.groups[gid].kind == "function" \
            else "scope"

    def _square(self, p: QPainter, scene_rect: QRectF, least: float, color: QColor) -> None:
        c = self.map_from_scene(scene_rect.center())
        w = max(scene_rect.width() * self._scale, least)
        h = max(scene_rect.height() * self._scale, least)
        p.setPen(QPen(QColor("white"), 1.0))
        p.setBrush(color)
        p.drawRect(QRectF(c.x() - w / 2, c.y() - h / 2, w, h))

    # -- painting -----------------------------------------------------------------
    def paintEvent(self, e) -> None:  # noqa: N802 - Qt's name
        self.paints += 1
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("#FFFFFF"))
        if self.is_empty():
            self._image = None
            p.setPen(QColor("#707070"))
            f = p.font()
            f.setItalic(True)
            p.setFont(f)
            p.drawText(self.rect().adjusted(12, 10, -12, -10), Qt.AlignLeft | Qt.AlignTop | Qt.TextWordWrap,
                       EMPTY_TEXT)
            p.end()
            return
        if self._stale():
            self._render()
        p.drawImage(0, 0, self._image)
        r = self.viewport_rect()
        c = r.center()  # never smaller than a few pixels: zoomed in, it still says where
        r = QRectF(c.x() - max(r.width(), 6) / 2, c.y() - max(r.height(), 6) / 2,
                   max(r.width(), 6), max(r.height(), 6))
        graph, seen = QPainterPath(), QPainterPath()
        graph.addRect(self._graph_rect())
        seen.addRect(r)
        p.fillPath(graph.subtracted(seen), SHADE)  # the graph but the part in view is shaded
        if self._top is not None:
            p.drawImage(0, 0, self._top)
        p.setPen(QPen(VIEW_PEN, 2))
        p.setBrush(Qt.NoBrush)
        p.drawRect(r)
        if self.hasFocus():
            p.setPen(QPen(self.palette().highlight().color(), 2))
            p.setBrush(Qt.NoBrush)
            p.drawRect(QRectF(self.rect()).adjusted(1, 1, -1, -1))
        p.end()

    # -- moving the main view -----------------------------------------------------
    def _go(self, pos: QPointF) -> None:
        if self.is_empty():
            return
        if self._stale():
            self._render()
        self.view.touched()
        self.view.centerOn(self.map_to_scene(pos))
        self.update()

    def mousePressEvent(self, e) -> None:  # noqa: N802 - Qt's name
        if e.button() == Qt.LeftButton:
            self._dragging = True
            self._go(e.position())
        super().mousePressEvent(e)

    def mouseMoveEvent(self, e) -> None:  # noqa: N802 - Qt's name
        if self._dragging:
            self._go(e.position())

    def mouseReleaseEvent(self, e) -> None:  # noqa: N802 - Qt's name
        self._dragging = False
        super().mouseReleaseEvent(e)

    def keyPressEvent(self, e) -> None:  # noqa: N802 - Qt's name
        steps = {Qt.Key_Left: (-1, 0), Qt.Key_Right: (1, 0), Qt.Key_Up: (0, -1), Qt.Key_Down: (0, 1)}
        if e.key() not in steps or self.is_empty():
            super().keyPressEvent(e)
            return
        dx, dy = steps[e.key()]
        v = self.view
        r = v.mapToScene(v.viewport().rect()).boundingRect()
        v.touched()
        v.centerOn(r.center() + QPointF(dx * r.width() / 10, dy * r.height() / 10))
        self.update()
