"""The graph view: zoom, pan, fit, select, and the gradient path view of a :class:`GraphScene`.

The scene (:mod:`app.graph.scene`) builds the items; the view keeps what is about the
screen: the selection across rebuilds, the highlighted and path-view overlays, the first
view and the zoom-dependent level of detail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsView, QMenu

from tfviz.report import Report
from tfviz.structure.gradient_path import GradientPath
from tfviz.structure.hierarchy import ROOT

from .. import theme
from .building import BackgroundBuild
from .context_menu import add_graph_actions
from .framing import Framing
from .items import EdgeBatch, FrameItem, NodeItem, paint_ramp
from .palette import magnitude_pen, pen_for
from .scene import GraphScene

#: what is not on a shown gradient path is drawn at this opacity
DIM = 0.22


def _delegate(name: str, settable: bool = False) -> property:
    """A view attribute that is the scene's (``view.node_items`` is ``view.scene().node_items``)."""
    get = lambda self: getattr(self.scene(), name)
    put = (lambda self, v: setattr(self.scene(), name, v)) if settable else None
    return property(get, put, doc=f"The scene's ``{name}``.")


class GraphView(QGraphicsView):
    nodeSelected = Signal(str)  # op id or group id ("" when cleared)
    pathRequested = Signal(str)  # "Show path" on a node: its id

    report = _delegate("report")
    hierarchy = _delegate("hierarchy")
    gl = _delegate("gl")
    node_items = _delegate("node_items")
    frames = _delegate("frames")
    edge_routes = _delegate("edge_routes")
    edge_items = _delegate("edge_items")
    edge_cats = _delegate("edge_cats")
    edge_status = _delegate("edge_status")
    last_layout_s = _delegate("last_layout_s")
    expanded = _delegate("expanded", settable=True)
    only_path = _delegate("only_path", settable=True)
    magnitude = _delegate("magnitude", settable=True)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setScene(GraphScene(self))
        self._background = BackgroundBuild(self.scene(), self)
        #: more right-click entries (the Jacobian's): each is called with the menu and the position
        self.menu_hooks: list[Callable[[QMenu, QPoint], None]] = []
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._show_menu)
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setOptimizationFlags(
            QGraphicsView.OptimizationFlag.DontSavePainterState
            | QGraphicsView.OptimizationFlag.DontAdjustForAntialiasing
        )
        self.setBackgroundBrush(QColor(theme.PAPER))
        self._overlay = None
        self.highlighted_edges = 0
        self.placeholder = ""  # said in the middle while there is no graph to draw
        self.path: GradientPath | None = None  # the gradient path shown (everything else dimmed)
        self._path_items = []
        self.scene().selectionChanged.connect(self._on_selection)
        self.framing = Framing(self)  # the first view, fits and the readable zoom
        for bar in (self.horizontalScrollBar(), self.verticalScrollBar()):
            bar.sliderPressed.connect(self.framing.touched)

    def scene(self) -> GraphScene:
        return cast(GraphScene, super().scene())  # set in __init__

    def set_placeholder(self, text: str) -> None:
        self.placeholder = text
        self.viewport().update()

    def drawForeground(self, painter: QPainter, rect: QRectF | QRect) -> None:  # noqa: N802 - Qt's name
        super().drawForeground(painter, rect)
        if self.magnitude and self.node_items:
            self._draw_scale(painter)
        if self.node_items or not self.placeholder:
            return
        painter.save()
        painter.resetTransform()
        painter.setPen(QColor(theme.FAINT))
        f = painter.font()
        f.setItalic(True)
        f.setPointSizeF(f.pointSizeF() * 1.15)
        painter.setFont(f)
        painter.drawText(
            self.viewport().rect().adjusted(40, 40, -40, -40),
            Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap,
            self.placeholder,
        )
        painter.restore()

    def magnitude_range(self) -> tuple[float, float]:
        return self.scene().magnitude_range()

    def _draw_scale(self, painter: QPainter) -> None:
        """The magnitude overlay's colour scale, bottom right: log10 of the gradient norm."""
        lo, hi = self.magnitude_range()
        painter.save()
        painter.resetTransform()
        vp = self.viewport().rect()
        w, h = 180, 12
        x0, y0 = vp.right() - w - 16, vp.bottom() - 44
        painter.fillRect(QRectF(x0 - 8, y0 - 52, w + 16, 82), QColor(255, 255, 255, 225))
        paint_ramp(painter, QRectF(x0, y0, w, h), lo, hi)
        painter.setPen(QColor(theme.INK))
        f = painter.font()
        f.setPixelSize(11)
        painter.setFont(f)
        painter.drawText(QRectF(x0, y0 - 18, w, 16), Qt.AlignmentFlag.AlignCenter, "gradient norm (log10)")
        # without a norm: "not measured" must never read as "no gradient"
        for i, (arrives, text) in enumerate(((True, "passes, not measured"), (False, "no gradient"))):
            yy = y0 - 44 + 13 * i
            sample = magnitude_pen(None, lo, hi, arrives=arrives)
            sample.setWidthF(2.0)
            painter.setPen(sample)
            painter.drawLine(QPointF(x0, yy + 7), QPointF(x0 + 26, yy + 7))
            painter.setPen(QColor(theme.INK))
            painter.drawText(QRectF(x0 + 32, yy, w - 32, 14), Qt.AlignmentFlag.AlignLeft, text)
        painter.drawText(QRectF(x0, y0 + h + 1, w, 14), Qt.AlignmentFlag.AlignLeft, f"1e{round(lo)}")
        painter.drawText(QRectF(x0, y0 + h + 1, w, 14), Qt.AlignmentFlag.AlignRight, f"1e{round(hi)}")
        painter.restore()

    # -- model ------------------------------------------------------------------
    def set_report(self, report: Report | None) -> None:
        self._overlay, self._path_items, self.path = None, [], None
        self.scene().set_report(report)
        if report is not None and not report.graph.ops:
            # the run that drew "Analyzing…" is over: say why there is no graph to draw
            what = "step" if report.mode == "program" else "target"
            self.set_placeholder(
                f"No graph: the {what} could not be traced by tf.function, so its verdicts come from"
                " running it eagerly. The Problems panel says why."
                if not report.traced
                else f"No graph: the {what} makes no op."
            )
        elif report is not None:
            self.set_placeholder("")  # nothing stale shows through a view filtered to nothing
        if self.hierarchy is None:
            return
        self.rebuild()
        self.framing.first_view()
        self.framing.untouched = True  # until the user moves the view, a resize re-runs first_view

    def first_problem(self) -> list[str]:
        """The first problem's op, then an affected variable's node: what the window opens on."""
        return self.scene().first_problem()

    def set_only_path(self, on: bool, background: bool = False) -> None:
        self.only_path = on
        self.rebuild(background=background)

    def set_magnitude(self, on: bool, background: bool = False) -> None:
        self.magnitude = on
        self.rebuild(background=background)

    def toggle_group(self, gid: str, background: bool = False) -> None:
        """Open or close group ``gid``, keeping it where it is on screen; ``background``:
        see :meth:`rebuild` (a double-click's)."""
        if gid == ROOT or self.hierarchy is None:
            return
        self.framing.touched()
        if gid in self.expanded:
            self.expanded.discard(gid)
            self.expanded -= {g for g in self.expanded if gid in self.hierarchy.group_chain(g)[:-1]}
        else:
            self.expanded.add(gid)
        self.rebuild(keep=gid, background=background)

    def set_all_expanded(self, on: bool, background: bool = False) -> None:
        """Open (``on``) or close every group, then fit the graph in view; ``background``:
        without holding up the window (:meth:`rebuild`), as the toolbar's buttons do."""
        if self.hierarchy is None:
            return
        self.framing.touched()
        self.expanded = self.scene().expansion("all" if on else "none")
        self.rebuild(background=background, then=self.fit)

    # -- building ---------------------------------------------------------------
    def building(self) -> bool:
        """A rebuild in the background is not done yet."""
        return self._background.busy()

    def rebuild(
        self, keep: str | None = None, *, background: bool = False, then: Callable[[], object] | None = None
    ) -> None:
        """Rebuild the scene for the current collapse state, keeping the selection, the
        path view and (with ``keep``) that node's place on screen; then ``then()``.

        ``background``: placed on a thread and drawn a step at a time between events
        (:mod:`app.graph.building`), for what the user asks of the graph itself (Expand
        all, a double-click on a group, Path only): the window stays responsive however
        large the graph. Otherwise at once, for a caller that needs the items now (a node
        revealed and selected). Either drops a background rebuild still in flight."""
        self._background.stop()
        if self.hierarchy is None:
            return
        anchor = None
        if keep is not None:
            it = self.node_items.get(keep) or self.frames.get(keep)
            if it is not None:
                anchor = self.mapFromScene(it.pos())
        sc = self.scene()
        selected = [getattr(i, "node_id", None) for i in sc.selectedItems()]
        sc.blockSignals(True)
        self._overlay, self._path_items = None, []

        def done() -> None:
            self._rebuilt(selected, keep, anchor)
            if then is not None:
                then()

        if background:
            self._background.start(done)
        else:
            sc.build()
            done()

    def _rebuilt(self, selected: list[str | None], keep: str | None, anchor: QPoint | None) -> None:
        sc = self.scene()
        self.update_lod()
        self.setSceneRect(sc.sceneRect())  # updates the scroll bars now, so centerOn works at once
        sc.blockSignals(False)
        for nid in selected:
            if nid in self.node_items:
                self.node_items[nid].setSelected(True)
        if self.path is not None:
            self._apply_path()
        if anchor is not None:
            it = self.node_items.get(keep) or self.frames.get(keep)
            if it is not None:
                delta = self.mapFromScene(it.pos()) - anchor
                self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() + delta.x())
                self.verticalScrollBar().setValue(self.verticalScrollBar().value() + delta.y())

    # -- selection & highlight ---------------------------------------------------
    def _on_selection(self) -> None:
        sel = [i for i in self.scene().selectedItems() if isinstance(i, NodeItem)]
        self.nodeSelected.emit(sel[0].node_id if sel else "")

    def reveal(self, op_id: str) -> NodeItem | None:
        """Expand the groups hiding ``op_id``, then return its item."""
        if self.hierarchy is None or op_id not in self.hierarchy.ops:
            return None
        op_id = self.hierarchy.alias.get(op_id, op_id)  # a weight's read is drawn as the weight
        missing = [g for g in self.hierarchy.chain[op_id] if g not in self.expanded]
        if missing or op_id not in self.node_items:
            self.expanded.update(self.hierarchy.chain[op_id])
            if self.only_path and not self.hierarchy.ops[op_id].on_path:
                self.only_path = False
            self.rebuild()
        return self.node_items.get(op_id)

    def select_op(self, op_id: str, center: bool = True, background: bool = False) -> bool:
        """Select ``op_id``'s node, opening the groups that hide it, and (``center``) bring it
        into view; False where the graph has no such op. ``background``: the groups open as
        :meth:`rebuild` does in the background, and the node is selected once drawn (a
        click on a problem or a search match: the window goes on answering meanwhile)."""
        if self.path is not None and op_id not in self.path.ops:
            self.show_path(None)  # going elsewhere (a problem, a search match) ends the path view
        if background and self.hierarchy is not None and op_id in self.hierarchy.ops:
            drawn = self.hierarchy.alias.get(op_id, op_id)
            if drawn not in self.node_items or any(
                g not in self.expanded for g in self.hierarchy.chain[drawn]
            ):
                self.expanded.update(self.hierarchy.chain[drawn])
                if self.only_path and not self.hierarchy.ops[drawn].on_path:
                    self.only_path = False
                self.rebuild(background=True, then=lambda: self.select_op(op_id, center))
                return True
        item = self.reveal(op_id)
        if item is None:
            return False
        self.framing.touched()
        self.scene().clearSelection()
        item.setSelected(True)
        if center:
            self.focus_on(op_id)
        return True

    def focus_on(self, op_id: str) -> None:
        """Zoom in to a readable scale and centre ``op_id`` (now and after the scene settles)."""
        item = self.reveal(op_id)
        if item is None:
            return
        if self.transform().m11() < 0.6:
            self.resetTransform()
            self.scale(0.8, 0.8)
            self.update_lod()
        c = item.sceneBoundingRect().center()
        self.centerOn(c)
        self.framing.later(lambda: self.centerOn(c))

    def highlight(self, op_ids: set[str]) -> None:
        """Outline the drawn edges between the given ops (a variable's paths to the target)."""
        if self._overlay is not None:
            self.scene().removeItem(self._overlay)
            self._overlay = None
        for it in self.node_items.values():
            if it.highlight:
                it.highlight = False
                it.update()
        self.highlighted_edges = 0
        if not op_ids or self.hierarchy is None:
            return
        reps = {self.hierarchy.representative(o, self.expanded) for o in op_ids if o in self.hierarchy.ops}
        path = QPainterPath()
        for (a, b), p in self.edge_routes.items():
            if a in reps and b in reps:
                path.addPath(p)
                self.highlighted_edges += 1
        for r in reps:
            if r in self.node_items:
                self.node_items[r].highlight = True
                self.node_items[r].update()
        pen = QPen(QColor(255, 193, 7, 150), 7.0)
        self._overlay = EdgeBatch(path, pen, -2)
        self.scene().addItem(self._overlay)

    # -- gradient path -------------------------------------------------------------
    def show_path(self, path: GradientPath | None, fit: bool = True) -> None:
        """Isolate ``path``: its ops and edges drawn as they are, everything else dimmed, the
        view fitted to it (never below a readable zoom). ``None`` clears it."""
        self.framing.touched()
        self.path = path
        if path is None or self.hierarchy is None:
            self._apply_path()
            return
        if path.end in self.hierarchy.ops:  # the cut (or the target) is shown as itself
            want = set(self.hierarchy.chain[self.hierarchy.alias.get(path.end, path.end)]) - self.expanded
            if want:
                self.expanded |= want
                self.rebuild()
        self._apply_path()
        if fit:
            h = self.hierarchy
            reps = {h.representative(o, self.expanded) for o in path.ops if o in h.ops}
            items = [self.node_items[r] for r in reps if r in self.node_items]
            key = path.end if path.cut else path.start  # the cut, or the variable
            key = self.hierarchy.representative(key, self.expanded) if key in self.hierarchy.ops else key
            self.framing.fit_items(items, center=self.node_items.get(key))

    def path_reps(self) -> set[str]:
        if self.path is None or self.hierarchy is None:
            return set()
        h = self.hierarchy
        return {h.representative(o, self.expanded) for o in self.path.ops if o in h.ops}

    def _apply_path(self) -> None:
        for it in self._path_items:
            self.scene().removeItem(it)
        self._path_items = []
        reps = self.path_reps()
        on = bool(reps)
        self.highlighted_edges = 0
        ends = (
            {
                self.hierarchy.representative(o, self.expanded) if o in self.hierarchy.ops else o
                for o in (self.path.start, self.path.end)
            }
            if on and self.path is not None
            else set()
        )
        for nid, it in self.node_items.items():
            it.setOpacity(DIM if on and nid not in reps else 1.0)
            if it.highlight != (nid in ends):
                it.highlight = nid in ends
                it.update()
        for it in {id(b): b for b in self.edge_items.values()}.values():
            it.setOpacity(DIM if on else 1.0)
        for f in self.frames.values():
            f.setOpacity(0.6 if on else 1.0)
        if not on:
            return
        by_pen: dict[str, QPainterPath] = {}
        for (a, b), route in self.edge_routes.items():
            if a in reps and b in reps:
                by_pen.setdefault(self.edge_status.get((a, b), "passes"), QPainterPath()).addPath(route)
        self.highlighted_edges = sum(1 for a, b in self.edge_routes if a in reps and b in reps)
        halo = QPainterPath()
        for p in by_pen.values():
            halo.addPath(p)
        items = [EdgeBatch(halo, QPen(QColor(255, 193, 7, 110), 9.0), -1.5)]
        items += [EdgeBatch(p, pen_for(st), 0.5) for st, p in by_pen.items()]
        for it in items:
            self.scene().addItem(it)
        self._path_items = items

    # -- navigation ---------------------------------------------------------------
    OVERVIEW_SCALE = 0.08

    def update_lod(self) -> None:
        """Swap node items for per-tile overview paths when nodes are a few pixels wide."""
        s = self.transform().m11()
        self.scene().set_far(s < self.OVERVIEW_SCALE and len(self.node_items) > 400, s)

    def content_rect(self) -> QRectF:
        """The nodes and group frames (not the zoom-dependent problem marks)."""
        return self.scene().content_rect()

    def zoom_by(self, factor: float) -> None:
        self.framing.touched()
        s = self.transform().m11() * factor
        if 0.0002 < s < 8:
            self.scale(factor, factor)
            self.update_lod()

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self.framing.touched()
        self._press = event.position()
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().mouseReleaseEvent(event)
        press = getattr(self, "_press", None)
        if (
            self.path is not None
            and press is not None
            and event.button() == Qt.MouseButton.LeftButton
            and (event.position() - press).manhattanLength() < 4
            and not any(isinstance(i, NodeItem) for i in self.items_at(event.position().toPoint()))
        ):
            self.show_path(None)  # a click on the background shows everything again

    def wheelEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self.zoom_by(1.0015 ** event.angleDelta().y())

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802 - Qt's name
        for it in self.items_at(event.position().toPoint()):
            if isinstance(it, NodeItem) and it.kind == "group":
                self.toggle_group(it.node_id, background=True)
                return
            if isinstance(it, FrameItem) and it.title_rect().contains(
                it.mapFromScene(self.mapToScene(event.position().toPoint()))
            ):
                self.toggle_group(it.group_id, background=True)
                return
        super().mouseDoubleClickEvent(event)

    def items_at(self, pos):
        return QGraphicsView.items(self, pos)

    def fit(self) -> None:
        """The whole graph in view, at most a little larger than life."""
        self.framing.fit()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.framing.resized()

    def context_menu(self, pos: QPoint) -> QMenu | None:
        """The right-click menu at ``pos`` (viewport coordinates): the graph's own entries
        (:mod:`app.graph.context_menu`), then those of each of ``menu_hooks``; None when
        nothing applies there."""
        if self.hierarchy is None:
            return None
        menu = QMenu(self)
        add_graph_actions(menu, self, pos)
        for hook in self.menu_hooks:
            hook(menu, pos)
        return menu if any(not a.isSeparator() for a in menu.actions()) else None

    def _show_menu(self, pos: QPoint) -> None:
        menu = self.context_menu(pos)
        if menu is not None:
            menu.exec(self.viewport().mapToGlobal(pos))
