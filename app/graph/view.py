"""The graph view: builds scene items from a placed layout; zoom, pan, fit, select.

Edges are drawn between the *visible representatives* of their endpoints (an
op, or the collapsed group that hides it); several edges between the same pair
merge into one drawn edge whose style is the worst of their statuses.
"""

from __future__ import annotations

import math
import os

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsScene, QGraphicsSimpleTextItem, QGraphicsView

from app.display import location
from app.graph.gradient_path import GradientPath
from app.graph.hierarchy import ROOT, Hierarchy, layer_names, mark_not_trained
from app.graph.items import _FONT, EdgeBatch, FrameItem, NodeItem, ProblemMarks, Tile
from app.graph.palette import QUIET, STYLES, category, look, magnitude_pen, pen_for, worst
from app.graph.placement import GraphLayout
from tfviz.report import Report

TILE = 1600.0
#: the smallest text the default and path views go down to, in pixels
READABLE_PX = 9.0
#: what is not on a shown gradient path is drawn at this opacity
DIM = 0.22


def readable_scale() -> float:
    """The zoom at which the nodes' titles are :data:`READABLE_PX` pixels tall."""
    from PySide6.QtGui import QFontInfo

    return READABLE_PX / max(QFontInfo(_FONT).pixelSize(), 1)


def _fmt_shape(shape) -> str:
    return "?" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


class GraphView(QGraphicsView):
    nodeSelected = Signal(str)  # op id or group id ("" when cleared)
    pathRequested = Signal(str)  # "Show path" on a node: its id

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self.scene().setItemIndexMethod(QGraphicsScene.NoIndex)
        self.setRenderHints(QPainter.Antialiasing | QPainter.TextAntialiasing)
        self.setDragMode(QGraphicsView.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.SmartViewportUpdate)
        self.setOptimizationFlags(
            QGraphicsView.DontSavePainterState | QGraphicsView.DontAdjustForAntialiasing
        )
        self.setBackgroundBrush(QColor("#FFFFFF"))
        self.report: Report | None = None
        self.h: Hierarchy | None = None
        self.gl: GraphLayout | None = None
        self.expanded: set[str] = set()
        self.only_path = False
        self.magnitude = False
        self.node_items: dict[str, NodeItem] = {}
        self.frames: dict[str, FrameItem] = {}
        self.edge_routes: dict[tuple[str, str], QPainterPath] = {}
        self.edge_items: dict[tuple[str, str], EdgeBatch] = {}
        self._overlay = None
        self.highlighted_edges = 0
        self.placeholder = ""  # said in the middle while there is no graph to draw
        self._tiles, self._overview, self._marks, self.edge_cats = [], [], None, {}
        self.path: GradientPath | None = None  # the gradient path shown (everything else dimmed)
        self._path_items = []
        self.scene().selectionChanged.connect(self._on_selection)

    def set_placeholder(self, text: str) -> None:
        self.placeholder = text
        self.viewport().update()

    def drawForeground(self, painter: QPainter, rect: QRectF) -> None:  # noqa: N802 - Qt's name
        super().drawForeground(painter, rect)
        if self.magnitude and self.node_items:
            self._draw_scale(painter)
        if self.node_items or not self.placeholder:
            return
        painter.save()
        painter.resetTransform()
        painter.setPen(QColor("#808080"))
        f = painter.font()
        f.setItalic(True)
        f.setPointSizeF(f.pointSizeF() * 1.15)
        painter.setFont(f)
        painter.drawText(self.viewport().rect().adjusted(40, 40, -40, -40),
                         Qt.AlignCenter | Qt.TextWordWrap, self.placeholder)
        painter.restore()

    def magnitude_range(self) -> tuple[float, float]:
        return (min(self._norms), max(self._norms)) if self._norms else (0.0, 0.0)

    def _draw_scale(self, painter: QPainter) -> None:
        """The magnitude overlay's colour scale, bottom right: log10 of the gradient norm."""
        lo, hi = self.magnitude_range()
        painter.save()
        painter.resetTransform()
        vp = self.viewport().rect()
        w, h = 180, 12
        x0, y0 = vp.right() - w - 16, vp.bottom() - 44
        painter.fillRect(QRectF(x0 - 8, y0 - 20, w + 16, 50), QColor(255, 255, 255, 225))
        for i in range(w):
            v = lo + (hi - lo) * i / max(w - 1, 1)
            painter.fillRect(QRectF(x0 + i, y0, 1.0, h), magnitude_pen(10 ** v, lo, hi).color())
        painter.setPen(QColor("#303030"))
        f = painter.font()
        f.setPixelSize(11)
        painter.setFont(f)
        painter.drawText(QRectF(x0, y0 - 18, w, 16), Qt.AlignCenter, "gradient norm (log10)")
        painter.drawText(QRectF(x0, y0 + h + 1, w, 14), Qt.AlignLeft, f"1e{lo:.0f}")
        painter.drawText(QRectF(x0, y0 + h + 1, w, 14), Qt.AlignRight, f"1e{hi:.0f}")
        painter.restore()

    # -- model ------------------------------------------------------------------
    def set_report(self, report: Report | None) -> None:
        self.report = report
        self.scene().clear()
        self.node_items, self.frames, self.edge_routes, self._overlay = {}, {}, {}, None
        self.edge_items, self._path_items, self.path = {}, [], None
        self._tiles, self._overview, self._marks = [], [], None
        if report is None or not report.graph.ops:
            self.h = self.gl = None
            return
        mark_not_trained(report)
        self.path = None
        self.h = Hierarchy(report.graph, layer_names(report.variables))
        self.gl = GraphLayout(self.h)
        self.expanded = self.h.default_expanded(focus=self.first_problem()[:1])
        self._norms = [math.log10(e.grad_norm) for e in report.graph.edges
                       if e.grad_norm and e.grad_norm > 0 and math.isfinite(e.grad_norm)]
        self.rebuild()
        self.first_view()

    def first_problem(self) -> list[str]:
        """The first problem's op, then an affected variable's node: what the window opens on."""
        if self.report is None:
            return []
        ids = {o.id for o in self.report.graph.ops}
        for p in self.report.problems:
            if p.op in ids and p.severity != "warning":
                return [p.op] + [f"var:{v}" for v in p.variables[:1] if f"var:{v}" in ids]
        return []

    def first_view(self) -> None:
        """On the first problem: the path from an affected variable through the cut to the
        target, at a readable zoom. A healthy graph is fitted if its labels stay legible;
        a long one (ResNet's chain of blocks) shows its top at a readable scale instead."""
        focus = self.first_problem()
        if focus:
            items = [self.node_items.get(self.h.representative(o, self.expanded)) for o in
                     [*focus, "__target__"] if o in self.h.ops]
            self.fit_items([i for i in items if i is not None], center=items[0])
            return
        self.fit()
        r = self.content_rect()
        if r.isEmpty() or self.transform().m11() >= readable_scale():
            return
        s = readable_scale()
        self.resetTransform()
        self.scale(s, s)
        self.update_lod()
        first = min(self.node_items.values(), key=lambda i: (i.sceneBoundingRect().top(),
                                                             i.sceneBoundingRect().left()), default=None)
        x = first.sceneBoundingRect().center().x() if first is not None else r.center().x()
        x = max(x, r.left() + self.viewport().width() / (2 * s) - 20 / s)
        top = QPointF(x, r.top() + self.viewport().height() / (2 * s) - 20 / s)
        self.centerOn(top)
        QTimer.singleShot(0, lambda: self.centerOn(top))

    def fit_items(self, items, center=None) -> None:
        """Fit the view to ``items``, never below a readable zoom: when they do not fit at
        that zoom, ``center`` (the cut) is centred instead."""
        r = QRectF()
        for it in items:
            r = r.united(it.sceneBoundingRect())
        if r.isEmpty():
            return
        self.fitInView(r.adjusted(-40, -40, 40, 40), Qt.KeepAspectRatio)
        s = min(max(self.transform().m11(), readable_scale()), 1.2)
        self.resetTransform()
        self.scale(s, s)
        self.update_lod()
        c = r.center()
        vw, vh = self.viewport().width() / s, self.viewport().height() / s
        if (r.width() > vw - 20 or r.height() > vh - 20) and center is not None:
            c = center.sceneBoundingRect().center()
        self.centerOn(c)
        QTimer.singleShot(0, lambda: self.centerOn(c))

    def set_only_path(self, on: bool) -> None:
        self.only_path = on
        self.rebuild()

    def set_magnitude(self, on: bool) -> None:
        self.magnitude = on
        self.rebuild()

    def toggle_group(self, gid: str) -> None:
        if gid == ROOT or self.h is None:
            return
        if gid in self.expanded:
            self.expanded.discard(gid)
            self.expanded -= {g for g in self.expanded if gid in self.h.group_chain(g)[:-1]}
        else:
            self.expanded.add(gid)
        self.rebuild(keep=gid)

    def set_all_expanded(self, on: bool) -> None:
        if self.h is None:
            return
        self.expanded = set(self.h.groups) if on else {ROOT}
        self.rebuild()
        self.fit()

    # -- building ---------------------------------------------------------------
    def rebuild(self, keep: str | None = None) -> None:
        if self.h is None:
            return
        anchor = None
        if keep is not None:
            it = self.node_items.get(keep) or self.frames.get(keep)
            if it is not None:
                anchor = self.mapFromScene(it.pos())
        selected = [getattr(i, "node_id", None) for i in self.scene().selectedItems()]
        sc = self.scene()
        sc.blockSignals(True)
        sc.clear()
        self.node_items, self.frames, self.edge_routes, self._overlay = {}, {}, {}, None
        self.edge_items, self._path_items = {}, []
        placed = self.gl.place(self.expanded, self.only_path)
        self.last_layout_s = placed.layout_s
        h = self.h
        for f in placed.frames:
            g = h.groups[f.id]
            item = FrameItem(f.id, QRectF(f.x, f.y, f.w, f.h), f"{g.label}  ·  {g.n_ops} ops",
                             g.kind == "function")
            sc.addItem(item)
            self.frames[f.id] = item
        tiles: dict[tuple[int, int], list[NodeItem]] = {}
        for p in placed.nodes.values():
            item = self._node_item(p)
            self.node_items[p.id] = item
            tiles.setdefault((int(p.x // TILE), int(p.y // TILE)), []).append(item)
        self._tiles, self._overview = [], []
        for kids in tiles.values():
            rect = QRectF()
            shapes = QPainterPath()
            for k in kids:
                r = k.mapRectToScene(k.boundingRect())
                rect = rect.united(r)
                shapes.addRect(r)
            tile = Tile(rect.adjusted(-4, -4, 4, 4))
            sc.addItem(tile)
            for k in kids:
                k.setParentItem(tile)
            self._tiles.append(tile)
            # zoomed far out, one C++-painted path per tile replaces thousands of Python paints
            ov = sc.addPath(shapes, QPen(Qt.NoPen), QColor("#9AA5B1"))
            ov.setVisible(False)
            self._overview.append(ov)
        self._build_edges(placed)
        marks = [(it.sceneBoundingRect(), it.far_cat) for it in self.node_items.values() if it.far_cat]
        self._marks = ProblemMarks(marks) if marks else None
        if self._marks is not None:
            sc.addItem(self._marks)
        self._lod_overview = None
        self.update_lod()
        rect = QRectF(-60, -60, placed.width + 120, placed.height + 120)
        sc.setSceneRect(rect)
        self.setSceneRect(rect)  # updates the scroll bars now, so centerOn works at once
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

    def _node_item(self, p) -> NodeItem:
        rect = QRectF(p.x, p.y, p.w, p.h)
        if p.kind == "group":
            g = self.h.groups[p.id]
            what = {"layer": "layer", "function": "function"}.get(g.kind, "scope")
            return NodeItem(p.id, rect, g.label, f"{what} · {g.n_ops} ops", kind="group",
                            on_path=g.on_path, badges=g.problems,
                            tooltip=f"{g.kind} {g.label}: {g.n_ops} ops"
                            + "".join(f"\n{n} × {STYLES[c].label}" for c, n in g.problems.items()))
        op = self.h.ops[p.id]
        kind = "target" if op.type == "Target" else "variable" if op.is_variable else "op"
        outs = ", ".join(f"{t.dtype}{_fmt_shape(t.shape)}" for t in op.outputs[:2])
        sub = op.type + (f" → {outs}" if outs else "")
        tip = f"{op.name}\n{op.type}" + (f"\n{op.message}" if op.message else "")
        if op.source:
            where = location(op.source.file, op.source.line, os.path.dirname(self.report.script))
            tip += f"\n{where}: {op.source.code}"
        label = self.h.title(op.id)
        if kind == "target" and self.report.mode == "program":
            # the step's description is long ("Model.fit → …: tape.gradient at x.py:90"); the
            # node is the value the program differentiates, so it says so, and the tooltip says where
            label, tip = "loss", f"the loss of the gradient step\n{self.report.target}\n{tip}"
        return NodeItem(op.id, rect, label, sub, kind=kind, status=op.status, on_path=op.on_path,
                        tooltip=tip)

    def _build_edges(self, placed) -> None:
        merged: dict[tuple[str, str], list] = {}
        self.edge_cats: dict[tuple[str, str], str] = {}  # drawn edge -> its legend category
        self.edge_status: dict[tuple[str, str], str] = {}  # drawn edge -> the status it is drawn with
        for e in self.report.graph.edges:
            if e.back or e.src not in self.h.ops or e.dst not in self.h.ops:
                continue
            a = self.h.representative(e.src, self.expanded)
            b = self.h.representative(e.dst, self.expanded)
            if a == b or a not in placed.nodes or b not in placed.nodes:
                continue
            if self.only_path and e.status == "off_path":
                continue
            merged.setdefault((a, b), []).append(e)
        lo, hi = self.magnitude_range()
        batches: dict[tuple, QPainterPath] = {}
        pens: dict[tuple, QPen] = {}
        batch_of: dict[tuple[str, str], tuple] = {}
        for (a, b), es in merged.items():
            pa, pb = placed.nodes[a], placed.nodes[b]
            pts = [QPointF(pa.x + pa.w / 2, pa.y + pa.h)]
            pts += [QPointF(x, y) for x, y in placed.routes.get((a, b), ())]
            pts.append(QPointF(pb.x + pb.w / 2, pb.y))
            path = QPainterPath(pts[0])
            for p0, p1 in zip(pts, pts[1:]):
                dy = max(20.0, abs(p1.y() - p0.y()) / 2)
                path.cubicTo(QPointF(p0.x(), p0.y() + dy), QPointF(p1.x(), p1.y() - dy), p1)
            self.edge_routes[(a, b)] = path
            status = worst(look(e) for e in es)
            self.edge_cats[(a, b)] = category(status)
            self.edge_status[(a, b)] = status
            if self.magnitude:
                g = max((e.grad_norm for e in es if e.grad_norm is not None), default=None)
                pen = magnitude_pen(g, lo, hi)
                key = (pen.color().name(), round(pen.widthF(), 1), pen.style())
            else:
                cat = category(status)
                pen = pen_for(status)
                key = (cat,)
            tkey = (int(pa.x // TILE), int(pa.y // TILE)) + key
            batches.setdefault(tkey, QPainterPath()).addPath(path)
            pens[tkey] = pen
            batch_of[(a, b)] = tkey
            cat = category(status)
            if cat not in QUIET:  # kept in the magnitude overlay too
                self._marker(path.pointAtPercent(0.5), cat, es)
        items = {}
        zs = {"off_path": -5, "muted": -4, "starved": -3, "passes": -1}
        for k, path in batches.items():
            z = zs.get(k[2], 0)
            items[k] = EdgeBatch(path, pens[k], z)
            self.scene().addItem(items[k])
        self.edge_items = {ab: items[k] for ab, k in batch_of.items()}  # drawn edge -> its batch

    def _marker(self, at: QPointF, cat: str, es) -> None:
        st = STYLES[cat]
        t = QGraphicsSimpleTextItem(st.marker)
        t.setBrush(QColor(st.color))
        t.setZValue(2)
        r = t.boundingRect()
        t.setPos(at - QPointF(r.width() / 2, r.height() / 2))
        kinds = sorted({e.status for e in es})
        t.setToolTip(f"{st.label}: {', '.join(kinds)} ({len(es)} edge{'s' if len(es) > 1 else ''})")
        self.scene().addItem(t)

    # -- selection & highlight ---------------------------------------------------
    def _on_selection(self) -> None:
        sel = [i for i in self.scene().selectedItems() if isinstance(i, NodeItem)]
        self.nodeSelected.emit(sel[0].node_id if sel else "")

    def reveal(self, op_id: str) -> NodeItem | None:
        """Expand the groups hiding ``op_id``, then return its item."""
        if self.h is None or op_id not in self.h.ops:
            return None
        op_id = self.h.alias.get(op_id, op_id)  # a weight's read is drawn as the weight
        missing = [g for g in self.h.chain[op_id] if g not in self.expanded]
        if missing or op_id not in self.node_items:
            self.expanded.update(self.h.chain[op_id])
            if self.only_path and not self.h.ops[op_id].on_path:
                self.only_path = False
            self.rebuild()
        return self.node_items.get(op_id)

    def select_op(self, op_id: str, center: bool = True) -> bool:
        if self.path is not None and op_id not in self.path.ops:
            self.show_path(None)  # going elsewhere (a problem, a search match) ends the path view
        item = self.reveal(op_id)
        if item is None:
            return False
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
        QTimer.singleShot(0, lambda: self.centerOn(c))

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
        if not op_ids or self.h is None:
            return
        reps = {self.h.representative(o, self.expanded) for o in op_ids if o in self.h.ops}
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
        self.path = path
        if path is None or self.h is None:
            self._apply_path()
            return
        if path.end in self.h.ops:  # the cut (or the target) is shown as itself
            want = set(self.h.chain[self.h.alias.get(path.end, path.end)]) - self.expanded
            if want:
                self.expanded |= want
                self.rebuild()
        self._apply_path()
        if fit:
            reps = {self.h.representative(o, self.expanded) for o in path.ops if o in self.h.ops}
            items = [self.node_items[r] for r in reps if r in self.node_items]
            key = path.end if path.cut else path.start  # the cut, or the variable
            key = self.h.representative(key, self.expanded) if key in self.h.ops else key
            self.fit_items(items, center=self.node_items.get(key))

    def path_reps(self) -> set[str]:
        if self.path is None or self.h is None:
            return set()
        return {self.h.representative(o, self.expanded) for o in self.path.ops if o in self.h.ops}

    def _apply_path(self) -> None:
        for it in self._path_items:
            self.scene().removeItem(it)
        self._path_items = []
        reps = self.path_reps()
        on = bool(reps)
        self.highlighted_edges = 0
        ends = {self.h.representative(o, self.expanded) if o in self.h.ops else o
                for o in (self.path.start, self.path.end)} if on else set()
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
        if getattr(self, "_marks", None) is not None:
            self._marks.set_scale(self.transform().m11())
        far = self.transform().m11() < self.OVERVIEW_SCALE and len(self.node_items) > 400
        if far == getattr(self, "_lod_overview", None):
            return
        self._lod_overview = far
        for t in self._tiles:
            t.setVisible(not far)
        for o in self._overview:
            o.setVisible(far)

    def content_rect(self) -> QRectF:
        """The nodes and group frames (not the zoom-dependent problem marks)."""
        r = QRectF()
        for it in (*self._tiles, *self.frames.values()):
            r = r.united(it.sceneBoundingRect())
        return r

    def zoom_by(self, factor: float) -> None:
        s = self.transform().m11() * factor
        if 0.0002 < s < 8:
            self.scale(factor, factor)
            self.update_lod()

    def fit(self) -> None:
        r = self.content_rect()
        if not r.isEmpty():
            self.fitInView(r.adjusted(-20, -20, 20, 20), Qt.KeepAspectRatio)
            if self.transform().m11() > 1.2:
                self.resetTransform()
                self.scale(1.2, 1.2)
                self.centerOn(r.center())
        self.update_lod()

    def mousePressEvent(self, event) -> None:
        self._press = event.position()
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event) -> None:
        super().mouseReleaseEvent(event)
        press = getattr(self, "_press", None)
        if self.path is not None and press is not None and event.button() == Qt.LeftButton \
                and (event.position() - press).manhattanLength() < 4 \
                and not any(isinstance(i, NodeItem) for i in self.items_at(event.position().toPoint())):
            self.show_path(None)  # a click on the background shows everything again

    def wheelEvent(self, event) -> None:
        self.zoom_by(1.0015 ** event.angleDelta().y())

    def mouseDoubleClickEvent(self, event) -> None:
        for it in self.items_at(event.position().toPoint()):
            if isinstance(it, NodeItem) and it.kind == "group":
                self.toggle_group(it.node_id)
                return
            if isinstance(it, FrameItem) and it.title_rect().contains(it.mapFromScene(
                    self.mapToScene(event.position().toPoint()))):
                self.toggle_group(it.group_id)
                return
        super().mouseDoubleClickEvent(event)

    def items_at(self, pos):
        return QGraphicsView.items(self, pos)
