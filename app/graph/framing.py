"""Framing the graph: what the view shows when a report opens, a fit, and a fit around
some items that never drops below a readable zoom.

The window opens on the first problem: the cut, an affected variable and the target
when they fit at a zoom where text is :data:`READABLE_PX` pixels, else the cut and the
variable, centred as near both as keeps the cut in view. The view is framed again when
the window lays itself out (a resize) until the user moves it: zooming, scrolling,
expanding or navigating calls :meth:`Framing.touched`, and re-centring still queued from
the first view is dropped. ``Framing`` is a mixin of :class:`app.graph.view.GraphView`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer

from .items import _FONT

if TYPE_CHECKING:
    from PySide6.QtGui import QPainterPath
    from PySide6.QtWidgets import QGraphicsView

    from tfviz.structure.gradient_path import GradientPath
    from tfviz.structure.hierarchy import Hierarchy

    from .items import FrameItem, NodeItem

    _View = QGraphicsView  # what the mixin is mixed into
else:
    _View = object

#: the smallest text the default and path views go down to, in pixels
READABLE_PX = 9.0


def readable_scale() -> float:
    """The zoom at which the nodes' titles are :data:`READABLE_PX` pixels tall."""
    from PySide6.QtGui import QFontInfo

    return READABLE_PX / max(QFontInfo(_FONT).pixelSize(), 1)


class Framing(_View):
    """The view's first view, fits and readable zoom (see the module)."""

    if TYPE_CHECKING:  # the view's (app.graph.view.GraphView)
        hierarchy: Hierarchy | None
        path: GradientPath | None
        node_items: dict[str, NodeItem]
        edge_routes: dict[tuple[str, str], QPainterPath]
        frames: dict[str, FrameItem]
        expanded: set[str]
        untouched: bool
        _moves: int

        def content_rect(self) -> QRectF: ...
        def update_lod(self) -> None: ...
        def first_problem(self) -> list[str]: ...

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        """A report opened while the window is still being laid out (or resized before the
        user has touched the view) is framed again for the viewport's real size."""
        super().resizeEvent(event)
        if getattr(self, "untouched", False) and self.hierarchy is not None and self.path is None:
            self.first_view()

    def touched(self) -> None:
        """The user moved the view: a later resize, or a re-centring still queued from the
        first view, keeps what they chose."""
        self.untouched = False
        self._moves += 1

    def _later(self, fn) -> None:
        """``fn`` once the event loop turns (the viewport has its size by then), unless the
        view is moved meanwhile."""
        n = self._moves
        QTimer.singleShot(0, lambda: n == self._moves and fn())

    def first_view(self) -> None:
        """On the first problem: the path from an affected variable through the cut to the
        target, at a readable zoom. A healthy graph is fitted if its labels stay legible;
        a long one (ResNet's chain of blocks, wrapped into columns) shows its top left at a
        readable scale instead, as many columns across as the view holds."""
        focus = self.first_problem()
        if focus:
            self._fit_problem(focus)
            # again once the window is laid out: the viewport may not have its size yet
            self._later(lambda: self._fit_problem(focus))
            return
        self.fit()
        r = self.content_rect()
        if r.isEmpty() or self.transform().m11() >= readable_scale():
            return
        s = readable_scale()
        self.resetTransform()
        self.scale(s, s)
        self.update_lod()
        # the top of what the gradient runs through: a GAN's discriminator step opens on the
        # discriminator, not on the noise op that starts the generator beside it; where the
        # path starts, not a column of a wrapped model that an edge from the last one feeds
        items = self.node_items
        on = {nid for nid in items if self._on_path(nid)}
        fed = {b for a, b in self.edge_routes if a in on}
        starts = ([it for nid, it in items.items() if nid in on and nid not in fed]
                  or [items[nid] for nid in on] or list(items.values()))
        first = min(starts, key=lambda i: (i.sceneBoundingRect().top(), i.sceneBoundingRect().left()),
                    default=None)
        half = self.viewport().width() / (2 * s)
        if first is None:
            x = max(r.center().x(), r.left() + half - 20 / s)
        else:  # from the left edge of the outermost box holding it (a model wrapped into
            # columns shows its first columns side by side), unless that leaves it out of view
            box = first.sceneBoundingRect()
            x = self._outer_left(first.node_id, box.left()) + half - 20 / s
            if box.right() + 20 / s > x + half:
                x = box.center().x()
        top = QPointF(x, r.top() + self.viewport().height() / (2 * s) - 20 / s)
        self.centerOn(top)
        self._later(lambda: self.centerOn(top))

    def _outer_left(self, nid: str, default: float) -> float:
        """The left edge of the outermost open box holding node ``nid``, else ``default``."""
        h = self.hierarchy
        if h is None:
            return default
        chain = h.group_chain(nid) if nid in h.groups else h.chain.get(nid, [])
        outer = self.frames.get(chain[1]) if len(chain) > 1 else None
        return outer.sceneBoundingRect().left() if outer is not None else default

    def _on_path(self, nid: str) -> bool:
        if self.hierarchy is None:
            return False
        op = self.hierarchy.ops.get(nid)
        if op is not None:
            return op.on_path
        group = self.hierarchy.groups.get(nid)
        return bool(group is not None and group.on_path)

    def _fit_problem(self, focus: list[str]) -> None:
        """Fit the cut, its variable and the target (``focus`` and ``__target__``'s boxes);
        when the three do not fit at a readable zoom, the cut and its variable: the
        target is often far below, and the cut beside its variable says more than the cut
        alone, which is all that would be centred otherwise."""
        if self.hierarchy is None:
            return
        items = []
        for o in [*focus, "__target__"]:
            h = self.hierarchy
            it = self.node_items.get(h.representative(o, self.expanded)) if o in h.ops else None
            if it is not None and it not in items:
                items.append(it)
        s = readable_scale()
        room = QRectF(0, 0, self.viewport().width() / s - 80, self.viewport().height() / s - 80)
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
        self.fitInView(r.adjusted(-40, -40, 40, 40), Qt.AspectRatioMode.KeepAspectRatio)
        s = min(max(self.transform().m11(), readable_scale()), 1.2)
        self.resetTransform()
        self.scale(s, s)
        self.update_lod()
        c = r.center()
        vw, vh = self.viewport().width() / s, self.viewport().height() / s
        if (r.width() > vw - 20 or r.height() > vh - 20) and center is not None:
            k = center.sceneBoundingRect()
            c = QPointF(_clamp(c.x(), k.right() + 20 - vw / 2, k.left() - 20 + vw / 2, k.center().x()),
                        _clamp(c.y(), k.bottom() + 20 - vh / 2, k.top() - 20 + vh / 2, k.center().y()))
        self.centerOn(c)
        self._later(lambda: self.centerOn(c))

    def fit(self) -> None:
        r = self.content_rect()
        if not r.isEmpty():
            self.fitInView(r.adjusted(-20, -20, 20, 20), Qt.AspectRatioMode.KeepAspectRatio)
            if self.transform().m11() > 1.2:
                self.resetTransform()
                self.scale(1.2, 1.2)
                self.centerOn(r.center())
        self.update_lod()


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
