"""The Overview dock's minimap: the graph small, the part in view outlined.

Zoomed far out, the main view shows long models as a strip (ResNet50 at Fit: 0.5 %), so
the minimap is where the user sees the neighbourhood and where the broken ops sit.

**Scale.** A graph shaped like the widget is drawn whole. A long one (ResNet50's chain is
ten times taller than wide, the dock three times wider than tall) would be a strip a few
pixels wide that way, so it is drawn as editors draw a long file's minimap: filling the
widget across, scrolled along. The view's window (at its readable zoom, or further out)
takes at most :data:`VIEW_SHARE` of the minimap's length, leaving context around it, and
the cached image stays within :data:`MAX_SIDE` and about :data:`MAX_AREA` device pixels
(20,000 nodes fall back to a smaller scale, not a 100 MB image); never below the fit.
As in VS Code, the band's position along the graph is the view's fraction of its own
scroll range, which keeps the view's rectangle inside the widget at both ends and between.
A thin indicator on the edge shows which part of the whole graph the band is, with ticks
where the problem ops are, outside the band too.

**Cost.** The scene is never rendered: once per rebuild of the view (or change of scale)
the node rectangles, group frames and edge batches are drawn into a cached image of the
whole graph, a few C++ calls per colour; problem ops go on a second image in their status
colour, enlarged so one broken op shows at any scale (:mod:`app.graph.overview_image`).
A scroll draws the two images at another offset. A rebuild replaces the view's ``node_items`` dict
and the scene emits ``changed``: the image is redrawn when that dict (or the scene rect)
is not the one it shows, with no hook in the view.

**Moving the view.** A click centres the main view on the point clicked; a drag moves the
view's rectangle with the mouse like an editor's minimap slider (the band scrolls under
it, so one drag reaches both ends), and a press on the rectangle does not jump. Pressing
the indicator goes to that part of the graph. The wheel scrolls the view; with the focus
here, the arrow keys pan it by a tenth of its width or height.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, QSize, QSizeF, Qt, QTimer
from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QApplication, QSizePolicy, QWidget

from .. import theme
from .framing import readable_scale
from .overview_image import MARGIN, draw_overview
from .palette import STYLES

#: A graph drawn whole would use less than 1/FILL_RATIO of the widget across: fill and scroll.
FILL_RATIO = 2.0
#: The main view's window takes at most this share of the minimap's length when it scrolls.
VIEW_SHARE = 0.5
#: The cached image's longest side and area, in device pixels (16 MB an image at most).
MAX_SIDE = 4096
MAX_AREA = 4096 * 1024
#: The scroll indicator: how far from the edge a press hits it, and its drawn width.
TRACK, TRACK_W = 7, 3
EMPTY_TEXT = (
    "The whole graph appears here, small, once a script is analyzed: problem ops"
    " in their colours, the part shown in the graph outlined. Click or drag to go there."
)
VIEW_PEN = QColor(theme.SELECTION_LINE)
#: Outside the part in view, the minimap is shaded.
SHADE = QColor(40, 50, 60, 34)
TRACK_BG, THUMB = QColor(theme.TRACK), QColor(theme.THUMB)


def _clamp(v: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, v))


class Minimap(QWidget):
    """An overview of ``view`` (a GraphView), kept in step with it."""

    def __init__(self, view, parent=None):
        super().__init__(parent)
        self.view = view
        self.setMinimumSize(120, 90)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip(
            "Overview: click or drag to move the graph view; the wheel scrolls it, the arrow keys pan it"
        )
        self.setAccessibleName("Graph overview")
        self.renders = 0  # how many times the cached image was drawn (tests check it stays cached)
        self.paints = 0  # how many times the widget was painted (tests check a scroll repaints it)
        self._image: QImage | None = None  # the whole graph, small
        self._top: QImage | None = None  # the target and the problem ops, drawn over the shade
        self._drawn_items = None  # the view's node_items dict the image shows
        self._drawn_rect = QRectF()
        self._scale = 1.0
        self._size = QSizeF()  # the image's size in widget pixels: the graph at _scale, plus margins
        self._marks: list[tuple[QRectF, str]] = []  # problem ops, scene rects
        self._drag: tuple | None = None  # ("track", axis) or ("rect", press pos, view centre, a click?)
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

    def _visible(self) -> QRectF:
        v = self.view
        return v.mapToScene(v.viewport().rect()).boundingRect()

    def _axes(self, a: int) -> tuple[float, float, float, float, float, float]:
        """Along axis ``a`` (0: x, 1: y): the image's and the widget's lengths in pixels,
        the scene rect's start and length, the view's visible start and length."""
        sr, vis = self._drawn_rect, self._visible()
        if a == 0:
            return (self._size.width(), self.width(), sr.left(), sr.width(), vis.left(), vis.width())
        return (self._size.height(), self.height(), sr.top(), sr.height(), vis.top(), vis.height())

    def scrolls(self, a: int) -> bool:
        """Whether the minimap shows a band of the graph along axis ``a``, not all of it."""
        return self._size.width() > self.width() if a == 0 else self._size.height() > self.height()

    def _pos(self) -> QPointF:
        """Where the image's top-left corner is drawn: centred along an axis where the whole
        graph fits; else scrolled by the view's fraction of its own scroll range, which
        keeps the view's rectangle inside the widget (its top runs from MARGIN to
        ``length - MARGIN - its height`` as the view goes from one end to the other)."""
        out = []
        for a in (0, 1):
            img, wid, st, length, vt, vh = self._axes(a)
            if img <= wid:
                out.append((wid - img) / 2)
                continue
            if wid - 2 * MARGIN - vh * self._scale > 0 and length > vh:
                t = _clamp((vt - st) / (length - vh), 0, 1) * (img - wid)
            else:  # the view shows more than the minimap holds: keep its middle in the middle
                t = _clamp((vt + vh / 2 - st) * self._scale + MARGIN - wid / 2, 0, img - wid)
            out.append(-t)
        return QPointF(*out)

    def _to_image(self, p: QPointF) -> QPointF:
        sr, s = self._drawn_rect, self._scale
        return QPointF((p.x() - sr.left()) * s + MARGIN, (p.y() - sr.top()) * s + MARGIN)

    def map_from_scene(self, p: QPointF) -> QPointF:
        """A scene point's position in the minimap, as it is drawn now."""
        return self._to_image(p) + self._pos()

    def map_to_scene(self, p: QPointF) -> QPointF:
        sr, s, o = self._drawn_rect, self._scale or 1.0, self._pos()
        return QPointF((p.x() - o.x() - MARGIN) / s + sr.left(), (p.y() - o.y() - MARGIN) / s + sr.top())

    def _map_rect(self, r: QRectF) -> QRectF:
        return QRectF(self.map_from_scene(r.topLeft()), self.map_from_scene(r.bottomRight()))

    def viewport_rect(self) -> QRectF:
        """The part of the scene the main view shows, in minimap coordinates."""
        return self._map_rect(self._visible())

    def _graph_rect(self) -> QRectF:
        return self._map_rect(self._drawn_rect)

    def wanted_scale(self) -> float:
        """The scale the image should be drawn at now: the whole-graph fit, or, for a graph
        far longer than the widget is, the fill across, within the limits above. The share
        limit is rounded down to a quarter power of two so that zooming the view out
        redraws the image only every 19 %, and zooming in (past readable) never does."""
        sr = self.view.scene().sceneRect()
        w, h = self.width() - 2 * MARGIN, self.height() - 2 * MARGIN
        if sr.isEmpty() or w <= 0 or h <= 0:
            return 1.0
        across = (w / sr.width(), h / sr.height())
        fit, fill = min(across), max(across)
        if fill < FILL_RATIO * fit:
            return fit
        a = 1 if across[0] > across[1] else 0  # a tall graph scrolls along y
        vp = self.view.viewport().size()
        zoom = min(self.view.transform().m11(), readable_scale())
        share = VIEW_SHARE * (w, h)[a] * zoom / max((vp.width(), vp.height())[a], 1)
        share = 2 ** (math.floor(math.log2(share) * 4) / 4)
        dpr = self.devicePixelRatioF()
        cap = min(
            (MAX_SIDE / dpr - 2 * MARGIN) / max(sr.width(), sr.height()),
            math.sqrt(MAX_AREA / sr.width() / sr.height()) / dpr,
        )
        return max(fit, min(fill, share, cap))

    # -- the cached image ---------------------------------------------------------
    def _check(self) -> None:
        """Redraw the image if the view was rebuilt since it was drawn; else just repaint."""
        if self._stale():
            self._image = None
        self.update()

    def _stale(self) -> bool:
        return (
            self._image is None
            or self.view.node_items is not self._drawn_items
            or self.view.scene().sceneRect() != self._drawn_rect
            or not math.isclose(self.wanted_scale(), self._scale, rel_tol=1e-6)
        )

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
        self._scale = self.wanted_scale()
        o = draw_overview(v, self._drawn_rect, self._scale, self.devicePixelRatioF())
        self._image, self._top, self._marks, self._size = o.image, o.top, o.marks, o.size

    # -- painting -----------------------------------------------------------------
    def paintEvent(self, e) -> None:  # noqa: N802 - Qt's name
        self.paints += 1
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(theme.PAPER))
        if self.is_empty():
            self._image = None
            p.setPen(QColor(theme.MUTED))
            f = p.font()
            f.setItalic(True)
            p.setFont(f)
            p.drawText(
                self.rect().adjusted(12, 10, -12, -10),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap,
                EMPTY_TEXT,
            )
            p.end()
            return
        if self._stale():
            self._render()
        o = self._pos()
        assert self._image is not None  # _render made it
        p.drawImage(o, self._image)
        r = self.viewport_rect()
        c = r.center()  # never smaller than a few pixels: zoomed in, it still says where
        r = QRectF(
            c.x() - max(r.width(), 6) / 2,
            c.y() - max(r.height(), 6) / 2,
            max(r.width(), 6),
            max(r.height(), 6),
        )
        graph, seen = QPainterPath(), QPainterPath()
        graph.addRect(self._graph_rect())
        seen.addRect(r)
        p.fillPath(graph.subtracted(seen), SHADE)  # the graph but the part in view is shaded
        if self._top is not None:
            p.drawImage(o, self._top)
        p.setPen(QPen(VIEW_PEN, 2))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(r)
        for a in (0, 1):
            if self.scrolls(a):
                self._paint_indicator(p, a, o)
        if self.hasFocus():
            p.setPen(QPen(self.palette().highlight().color(), 2))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRect(QRectF(self.rect()).adjusted(1, 1, -1, -1))
        p.end()

    def _track(self, a: int) -> QRectF:
        """The scroll indicator along axis ``a``: on the right edge for y, the bottom for x."""
        if a == 1:
            return QRectF(self.width() - TRACK_W - 2, 2, TRACK_W, self.height() - 4)
        return QRectF(2, self.height() - TRACK_W - 2, self.width() - 4, TRACK_W)

    def _paint_indicator(self, p: QPainter, a: int, o: QPointF) -> None:
        """Which part of the whole graph the band is (the thumb), and where along it the
        problem ops sit (ticks in their colours), so those outside the band are not lost."""
        tr = self._track(a)
        img, wid = self._axes(a)[:2]
        start, length = (tr.left(), tr.width()) if a == 0 else (tr.top(), tr.height())

        def span(lo: float, hi: float, grow: float = 0) -> QRectF:  # lo..hi along, the track across
            return (
                QRectF(lo, tr.top() - grow, hi - lo, tr.height() + 2 * grow)
                if a == 0
                else QRectF(tr.left() - grow, lo, tr.width() + 2 * grow, hi - lo)
            )

        t = -(o.x() if a == 0 else o.y())
        p.setPen(Qt.PenStyle.NoPen)
        p.fillRect(tr, TRACK_BG)
        p.fillRect(span(start + length * t / img, start + length * (t + wid) / img), THUMB)
        for r, cat in self._marks:
            q = self._to_image(r.center())
            at = start + length * (q.x() if a == 0 else q.y()) / img
            p.fillRect(span(at - 1.5, at + 1.5, 1), QColor(STYLES[cat].color))

    # -- moving the main view -----------------------------------------------------
    def _rate(self, a: int) -> float:
        """Scene units the view moves per pixel its rectangle is dragged along axis ``a``: where
        the band scrolls, the rectangle's travel in the widget spans the view's whole range."""
        img, wid, _, length, _, vh = self._axes(a)
        travel = wid - 2 * MARGIN - vh * self._scale
        if img > wid and travel > 0 and length > vh:
            return (length - vh) / travel
        return 1 / (self._scale or 1.0)

    def _on_track(self, pos: QPointF) -> int | None:
        if self.scrolls(1) and pos.x() >= self.width() - TRACK:
            return 1
        return 0 if self.scrolls(0) and pos.y() >= self.height() - TRACK else None

    def _track_to(self, a: int, pos: QPointF) -> None:
        """Centre the view on the part of the graph at ``pos``'s fraction of the indicator."""
        tr, sr, c = self._track(a), self._drawn_rect, self._visible().center()
        f = _clamp((pos.y() - tr.top()) / tr.height() if a else (pos.x() - tr.left()) / tr.width(), 0, 1)
        self.view.centerOn(
            QPointF(c.x(), sr.top() + sr.height() * f) if a else QPointF(sr.left() + sr.width() * f, c.y())
        )

    def mousePressEvent(self, e) -> None:  # noqa: N802 - Qt's name
        if e.button() != Qt.MouseButton.LeftButton or self.is_empty():
            super().mousePressEvent(e)
            return
        if self._stale():
            self._render()
        pos = e.position()
        self.view.framing.touched()
        a = self._on_track(pos)
        if a is not None:
            self._track_to(a, pos)
            self._drag = ("track", a)
        else:
            grabbed = self.viewport_rect().adjusted(-2, -2, 2, 2).contains(pos)
            if not grabbed:  # a click off the rectangle goes there at once
                self.view.centerOn(self.map_to_scene(pos))
            self._drag = ("rect", pos, self._visible().center(), grabbed)
        self.update()

    def mouseMoveEvent(self, e) -> None:  # noqa: N802 - Qt's name
        if self._drag is None:
            return
        pos = e.position()
        if self._drag[0] == "track":
            self._track_to(self._drag[1], pos)
        else:
            _, start, centre, grabbed = self._drag
            d = pos - start
            self._drag = ("rect", start, centre, grabbed and d.manhattanLength() < 3)
            self.view.centerOn(centre + QPointF(d.x() * self._rate(0), d.y() * self._rate(1)))
        self.update()

    def mouseReleaseEvent(self, e) -> None:  # noqa: N802 - Qt's name
        if self._drag is not None and self._drag[0] == "rect" and self._drag[3]:
            self.view.centerOn(self.map_to_scene(e.position()))  # a click on the rectangle: go there
            self.update()
        self._drag = None
        super().mouseReleaseEvent(e)

    def wheelEvent(self, e) -> None:  # noqa: N802 - Qt's name
        """The wheel scrolls the main view along the graph, as over an editor's minimap."""
        if self.is_empty():
            return
        self.view.framing.touched()
        bar = self.view.horizontalScrollBar() if self.scrolls(0) else self.view.verticalScrollBar()
        QApplication.sendEvent(bar, e)

    def keyPressEvent(self, e) -> None:  # noqa: N802 - Qt's name
        steps = {
            Qt.Key.Key_Left: (-1, 0),
            Qt.Key.Key_Right: (1, 0),
            Qt.Key.Key_Up: (0, -1),
            Qt.Key.Key_Down: (0, 1),
        }
        if e.key() not in steps or self.is_empty():
            super().keyPressEvent(e)
            return
        (dx, dy), r = steps[e.key()], self._visible()
        self.view.framing.touched()
        self.view.centerOn(r.center() + QPointF(dx * r.width() / 10, dy * r.height() / 10))
        self.update()
