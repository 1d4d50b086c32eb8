"""Framing the graph: what the view shows when a report opens, a fit, and a fit around
some items that never drops below a readable zoom.

The window opens on the first problem: the cut, an affected variable and the target
when they fit at a zoom where text is :data:`READABLE_PX` pixels, else the cut and the
variable, centred as near both as keeps the cut in view. The view is framed again when
the window lays itself out (a resize of the view, not of its viewport alone: a scroll bar
that a fit makes come or go must not fit again, or the two chase each other and the
event loop never rests) until the user moves it: zooming, scrolling,
expanding or navigating calls :meth:`Framing.touched`, and re-centring still queued from
the first view is dropped. Each :class:`app.graph.view.GraphView` holds one ``Framing``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer

from .items import _FONT

if TYPE_CHECKING:
    from PySide6.QtGui import QTransform
    from PySide6.QtWidgets import QWidget

    from tfviz.structure.hierarchy import Hierarchy

    from .items import FrameItem, NodeItem


class Framed(Protocol):
    """What framing needs of the view it frames (a :class:`~app.graph.view.GraphView`,
    which holds its ``Framing``): its items and zoom, nothing of how it is built."""

    hierarchy: Hierarchy | None
    node_items: dict[str, NodeItem]
    frames: dict[str, FrameItem]
    edge_routes: dict[tuple[str, str], Any]
    expanded: set[str]
    path: Any

    def first_problem(self) -> list[str]: ...
    def content_rect(self) -> QRectF: ...
    def update_lod(self) -> None: ...
    def centerOn(self, *args: Any) -> None: ...  # noqa: N802 - Qt's name
    def fitInView(self, *args: Any) -> None: ...  # noqa: N802 - Qt's name
    def resetTransform(self) -> None: ...  # noqa: N802 - Qt's name
    def scale(self, sx: float, sy: float) -> None: ...
    def transform(self) -> QTransform: ...
    def viewport(self) -> QWidget: ...
    def width(self) -> int: ...
    def height(self) -> int: ...


#: the smallest text the default and path views go down to, in pixels
READABLE_PX = 9.0


def readable_scale() -> float:
    """The zoom at which the nodes' titles are :data:`READABLE_PX` pixels tall."""
    from PySide6.QtGui import QFontInfo

    return READABLE_PX / max(QFontInfo(_FONT).pixelSize(), 1)


class Framing:
    """The view's first view, fits and readable zoom (see the module)."""

    def __init__(self, view: Framed) -> None:
        self.view = view
        self.untouched = False  # a report was framed and the user has not moved the view since
        self._moves = 0
        self._framed_at: tuple[int, int] | None = None  # the view's own size when last framed

    def resized(self) -> None:
        """A report opened while the window is still being laid out (or resized before the
        user has touched the view) is framed again for the viewport's real size."""
        v = self.view
        if (v.width(), v.height()) == self._framed_at:
            return  # the viewport alone: a scroll bar came or went with the last fit
        if self.untouched and v.hierarchy is not None and v.path is None:
            self.first_view()

    def touched(self) -> None:
        """The user moved the view: a later resize, or a re-centring still queued from the
        first view, keeps what they chose."""
        self.untouched = False
        self._moves += 1

    def later(self, fn) -> None:
        """``fn`` once the event loop turns (the viewport has its size by then), unless the
        view is moved meanwhile."""
        n = self._moves
        QTimer.singleShot(0, lambda: n == self._moves and fn())

    def first_view(self) -> None:
        """On the first problem: the path from an affected variable through the cut to the
        target, at a readable zoom. A healthy graph is fitted if its labels stay legible;
        a long one (ResNet's chain of blocks, wrapped into columns) shows its top left at a
        readable scale instead, as many columns across as the view holds."""
        self._framed_at = (self.view.width(), self.view.height())
        focus = self.view.first_problem()
        if focus:
            self._fit_problem(focus)
            # again once the window is laid out: the viewport may not have its size yet
            self.later(lambda: self._fit_problem(focus))
            return
        self.fit()
        r = self.view.content_rect()
        if r.isEmpty() or self.view.transform().m11() >= readable_scale():
            return
        s = readable_scale()
        self.view.resetTransform()
        self.view.scale(s, s)
        self.view.update_lod()
        # the top of what the gradient runs through: a GAN's discriminator step opens on the
        # discriminator, not on the noise op that starts the generator beside it; where the
        # path starts, not a column of a wrapped model that an edge from the last one feeds
        items = self.view.node_items
        on = {nid for nid in items if self._on_path(nid)}
        fed = {b for a, b in self.view.edge_routes if a in on}
        starts = (
            [it for nid, it in items.items() if nid in on and nid not in fed]
            or [items[nid] for nid in on]
            or list(items.values())
        )
        first = min(
            starts, key=lambda i: (i.sceneBoundingRect().top(), i.sceneBoundingRect().left()), default=None
        )
        half = self.view.viewport().width() / (2 * s)
        if first is None:
            x = max(r.center().x(), r.left() + half - 20 / s)
        else:  # from the left edge of the outermost box holding it (a model wrapped into
            # columns shows its first columns side by side), unless that leaves it out of view
            box = first.sceneBoundingRect()
            x = self._outer_left(first.node_id, box.left()) + half - 20 / s
            if box.right() + 20 / s > x + half:
                x = box.center().x()
        top = QPointF(x, r.top() + self.view.viewport().height() / (2 * s) - 20 / s)
        self.view.centerOn(top)
        self.later(lambda: self.view.centerOn(top))

    def _outer_left(self, nid: str, default: float) -> float:
        """The left edge of the outermost open box holding node ``nid``, else ``default``."""
        h = self.view.hierarchy
        if h is None:
            return default
        chain = h.group_chain(nid) if nid in h.groups else h.chain.get(nid, [])
        outer = self.view.frames.get(chain[1]) if len(chain) > 1 else None
        return outer.sceneBoundingRect().left() if outer is not None else default

    def _on_path(self, nid: str) -> bool:
        if self.view.hierarchy is None:
            return False
        op = self.view.hierarchy.ops.get(nid)
        if op is not None:
            return op.on_path
        group = self.view.hierarchy.groups.get(nid)
        return bool(group is not None and group.on_path)

    def _fit_problem(self, focus: list[str]) -> None:
        """Fit the cut, its variable and the target (``focus`` and ``__target__``'s boxes);
        when the three do not fit at a readable zoom, the cut and its variable: the
        target is often far below, and the cut beside its variable says more than the cut
        alone, which is all that would be centred otherwise."""
        if self.view.hierarchy is None:
            return
        items = []
        for o in [*focus, "__target__"]:
            h = self.view.hierarchy
            it = self.view.node_items.get(h.representative(o, self.view.expanded)) if o in h.ops else None
            if it is not None and it not in items:
                items.append(it)
        s = readable_scale()
        room = QRectF(0, 0, self.view.viewport().width() / s - 80, self.view.viewport().height() / s - 80)
        while len(items) > 2 and not _fits(items, room):
            items.pop()
        self.fit_items(items, center=items[0] if items else None)

    def fit_items(self, items, center=None) -> None:
        """Fit the view to ``items``, never below a readable zoom: when they do not fit at
        that zoom, the view is centred as near their centre as keeps ``center`` (the cut)
        in view, so as much of the rest shows as can beside it."""
        r = QRectF()
        for it in items:
            r = r.united(it.sceneBoundingRect())
        if r.isEmpty():
            return
        self.view.fitInView(r.adjusted(-40, -40, 40, 40), Qt.AspectRatioMode.KeepAspectRatio)
        s = min(max(self.view.transform().m11(), readable_scale()), 1.2)
        self.view.resetTransform()
        self.view.scale(s, s)
        self.view.update_lod()
        c = r.center()
        vw, vh = self.view.viewport().width() / s, self.view.viewport().height() / s
        if (r.width() > vw - 20 or r.height() > vh - 20) and center is not None:
            k = center.sceneBoundingRect()
            c = QPointF(
                _clamp(c.x(), k.right() + 20 - vw / 2, k.left() - 20 + vw / 2, k.center().x()),
                _clamp(c.y(), k.bottom() + 20 - vh / 2, k.top() - 20 + vh / 2, k.center().y()),
            )
        self.view.centerOn(c)
        self.later(lambda: self.view.centerOn(c))

    def fit(self) -> None:
        r = self.view.content_rect()
        if not r.isEmpty():
            self.view.fitInView(r.adjusted(-20, -20, 20, 20), Qt.AspectRatioMode.KeepAspectRatio)
            if self.view.transform().m11() > 1.2:
                self.view.resetTransform()
                self.view.scale(1.2, 1.2)
                self.view.centerOn(r.center())
        self.view.update_lod()


def _fits(items, room: QRectF) -> bool:
    """Whether the items' bounding rectangle fits in ``room`` (scene units)."""
    r = QRectF()
    for it in items:
        r = r.united(it.sceneBoundingRect())
    return r.width() <= room.width() and r.height() <= room.height()


def _clamp(x: float, lo: float, hi: float, fallback: float) -> float:
    """``x`` within ``[lo, hi]``; ``fallback`` when the range is empty (the box is wider
    than the viewport)."""
    return fallback if lo > hi else min(max(x, lo), hi)
