"""The graph scene: builds the items of a report's graph for a collapse state.

One builder for every picture of the graph: the window's view, the Export image dialog
and the headless ``tfviz export -o graph.svg`` all call :meth:`GraphScene.build`, so an
exported image is exactly what the window shows. The view adds only what is about the
screen (selection, the path view's overlays, zoom-dependent level of detail).

Edges are drawn between the *visible representatives* of their endpoints (an op, or the
collapsed group that hides it); several edges between the same pair merge into one drawn
edge whose style is the worst of their statuses. The edge from one column of a wrapped
group into the next (:mod:`app.graph.layout.columns`) runs up the gutter between them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsScene, QGraphicsSimpleTextItem

from tfviz.engine.untrained import mark_not_trained
from tfviz.report import Report, collector_paused
from tfviz.structure.hierarchy import ROOT, Hierarchy, group_outputs, layer_attributes

from .. import theme
from ..display import location
from .items import EdgeBatch, FrameItem, NodeItem, ProblemMarks, Tile
from .layout.placement import GraphLayout, Scene
from .palette import (
    CARRIES,
    QUIET,
    STYLES,
    carried_norm,
    category,
    look,
    magnitude_pen,
    pen_for,
    worst,
)

TILE = 1600.0
#: how much of the drawing one step does (:meth:`GraphScene.drawing`): a few milliseconds each
STEP_ITEMS, STEP_TILES, STEP_EDGES = 100, 4, 200
#: the collapse states an export can ask for (``--expand``)
EXPANSIONS = ("default", "all", "problems", "none")
#: the margin around the placed graph, in scene units
MARGIN = 60.0


def _fmt_shape(shape) -> str:
    return "?" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _rounded(points: list[QPointF], radius: float = 10.0) -> QPainterPath:
    """A path along ``points`` (runs across and up and down) with its corners rounded, each
    by at most half the shorter run beside it: a jump between columns reads as one line."""
    path = QPainterPath(points[0])
    for prev, at, nxt in zip(points, points[1:], points[2:]):
        d_in, d_out = at - prev, nxt - at
        len_in, len_out = math.hypot(d_in.x(), d_in.y()), math.hypot(d_out.x(), d_out.y())
        r = min(radius, len_in / 2, len_out / 2)
        if r <= 0:
            path.lineTo(at)
            continue
        path.lineTo(at - d_in * (r / len_in))
        path.quadTo(at, at + d_out * (r / len_out))
    path.lineTo(points[-1])
    return path


class GraphScene(QGraphicsScene):
    """The items of one report's graph in one collapse state, and what they stand for:
    ``node_items`` (op or collapsed group id -> item), ``frames`` (expanded groups),
    ``edge_routes`` / ``edge_items`` / ``edge_cats`` / ``edge_status`` (drawn edge ->
    its curve, its batch item, its legend category, the status it is drawn with)."""

    graphChanged = Signal()  # a report was taken or the items were rebuilt (export actions follow it)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)
        self.report: Report | None = None
        self.hierarchy: Hierarchy | None = None
        self.gl: GraphLayout | None = None
        self.expanded: set[str] = set()
        self.only_path = False
        self.magnitude = False
        self.norms: list[float] = []
        #: each group's first output tensor, for a layer box's subtitle
        self._group_outputs: dict[str, tuple[str, list[int | None] | None]] = {}
        self.last_layout_s = 0.0
        self._forget()

    def _forget(self) -> None:
        """After ``clear()``: no item is referenced any more."""
        self.node_items: dict[str, NodeItem] = {}
        self.frames: dict[str, FrameItem] = {}
        self.edge_routes: dict[tuple[str, str], QPainterPath] = {}
        self.edge_items: dict[tuple[str, str], EdgeBatch] = {}
        self.edge_cats: dict[tuple[str, str], str] = {}
        self.edge_status: dict[tuple[str, str], str] = {}
        self.tiles: list[Tile] = []
        self.overview: list = []
        self.marks: ProblemMarks | None = None
        self.far: bool | None = None
        self.lod_scale = 1.0  # the zoom the level of detail was last set for

    # -- model --------------------------------------------------------------------
    def set_report(self, report: Report | None) -> None:
        """Take ``report``'s graph, opened as the window opens it (``default``); nothing is
        built until :meth:`build`."""
        self.report = report
        self.clear()
        self._forget()
        if report is None or not report.graph.ops:
            self.hierarchy = self.gl = None
            self.graphChanged.emit()
            return
        mark_not_trained(report)
        with collector_paused():  # as build() is
            self.hierarchy = Hierarchy.of_report(report)
            self.gl = GraphLayout(self.hierarchy)
        self._group_outputs = group_outputs(self.hierarchy)
        carried = (carried_norm(e) for e in report.graph.edges)
        self.norms = [math.log10(g) for g in carried if g and g > 0 and math.isfinite(g)]
        self.expanded = self.expansion("default")
        self.graphChanged.emit()

    def first_problem(self) -> list[str]:
        """The first problem's op, then an affected variable's node: what the window opens on."""
        if self.report is None:
            return []
        ids = {o.id for o in self.report.graph.ops}
        for p in self.report.problems:
            if p.op in ids and p.severity == "error":
                return [p.op] + [f"var:{v}" for v in p.variables[:1] if f"var:{v}" in ids]
        return []

    def expansion(self, mode: str) -> set[str]:
        """The expanded groups of a collapse state (one of :data:`EXPANSIONS`): ``default``
        is the window's first view, ``problems`` opens only the groups that hold a problem
        op or a variable no gradient reaches."""
        if self.hierarchy is None:
            return set()
        if mode == "default":
            return self.hierarchy.default_expanded(focus=self.first_problem()[:1])
        if mode == "all":
            return set(self.hierarchy.groups)
        if mode == "none":
            return {ROOT}
        if mode != "problems":
            raise ValueError(f"unknown expansion {mode!r}: use one of {', '.join(EXPANSIONS)}")
        out = {ROOT}
        for op in self.hierarchy.ops.values():
            if category(op.status) not in QUIET or (op.is_variable and op.status == "starved"):
                out.update(self.hierarchy.chain.get(self.hierarchy.alias.get(op.id, op.id), []))
        return out

    def magnitude_range(self) -> tuple[float, float]:
        return (min(self.norms), max(self.norms)) if self.norms else (0.0, 0.0)

    # -- building -----------------------------------------------------------------
    def build(self) -> Scene | None:
        """Place and draw the graph for ``expanded``, ``only_path`` and ``magnitude``; the
        placement, or None when there is no graph.

        Without the cycle collector: the layout's and the items' many new objects set off its
        full passes over the whole window again and again (a quarter of a large graph's time)."""
        with collector_paused():
            placed = self.place()
            if placed is None:
                self.clear()
                self._forget()
                return None
            for _ in self.drawing(placed):
                pass
            return placed

    def place(self) -> Scene | None:
        """The placement for the current collapse state (None without a graph). Safe on
        another thread: it reads copies of the state and the layout's caches are locked."""
        gl = self.gl
        if self.hierarchy is None or gl is None:  # set together, with the report
            return None
        return gl.place(set(self.expanded), self.only_path)

    def drawing(self, placed: Scene) -> Iterator[None]:
        """Draw ``placed``, the scene cleared first, pausing (yielding) between steps of a
        few milliseconds each: :meth:`build` runs it to the end at once, the view a step at
        a time between events (:mod:`app.graph.building`), so the graph shows as it is made."""
        # The old items' Python side is let go a slice at a time: freeing 20,000 at once held
        # the event loop for a tenth of a second, twice what Qt's clear() takes.
        held: list[dict[Any, Any] | list[Any]] = [
            self.node_items,
            self.frames,
            self.edge_items,
            self.edge_routes,
            self.tiles,
            self.overview,
        ]
        far, scale = self.far, self.lod_scale  # the view's zoom: kept while the new items come
        self.clear()
        self._forget()
        self.far, self.lod_scale = far, scale
        for old in held:
            while old:
                if isinstance(old, dict):
                    for _ in range(min(len(old), STEP_ITEMS * 5)):
                        old.popitem()
                else:
                    del old[-STEP_ITEMS * 5 :]
                yield
        del held
        self.last_layout_s = placed.layout_s
        for f in placed.frames:
            g = self.hierarchy.groups[f.id]  # type: ignore[union-attr]  # placed from it
            item = FrameItem(
                f.id, QRectF(f.x, f.y, f.w, f.h), f"{g.label}  ·  {g.n_ops} ops", g.kind == "function"
            )
            self.addItem(item)
            self.frames[f.id] = item
        tiles: dict[tuple[int, int], list[NodeItem]] = {}
        for i, p in enumerate(placed.nodes.values(), 1):
            node_item = self._node_item(p)
            self.node_items[p.id] = node_item
            tiles.setdefault((int(p.x // TILE), int(p.y // TILE)), []).append(node_item)
            if i % STEP_ITEMS == 0:
                yield
        for i, kids in enumerate(tiles.values(), 1):
            rect = QRectF()
            shapes = QPainterPath()
            for k in kids:
                r = k.mapRectToScene(k.boundingRect())
                rect = rect.united(r)
                shapes.addRect(r)
            tile = Tile(rect.adjusted(-4, -4, 4, 4))
            tile.setVisible(not far)  # zoomed far out, its overview path stands in for it
            self.addItem(tile)
            for k in kids:
                k.setParentItem(tile)
            self.tiles.append(tile)
            # zoomed far out, one C++-painted path per tile replaces thousands of Python paints
            ov = self.addPath(shapes, QPen(Qt.PenStyle.NoPen), QColor(theme.OVERVIEW_OP))
            ov.setVisible(bool(far))
            self.overview.append(ov)
            if i % STEP_TILES == 0:
                yield
        yield from self._drawing_edges(placed)
        marks = [(it.sceneBoundingRect(), it.far_cat) for it in self.node_items.values() if it.far_cat]
        if marks:
            self.marks = ProblemMarks(marks)
            self.addItem(self.marks)
        self.setSceneRect(QRectF(-MARGIN, -MARGIN, placed.width + 2 * MARGIN, placed.height + 2 * MARGIN))
        self.graphChanged.emit()

    def _node_item(self, p) -> NodeItem:
        assert self.hierarchy is not None and self.report is not None  # called by build, with a report
        rect = QRectF(p.x, p.y, p.w, p.h)
        if p.kind == "group":
            g = self.hierarchy.groups[p.id]
            what = {"layer": "layer", "function": "function", "gradient": "tape.gradient"}.get(
                g.kind, "scope"
            )
            out = self._group_outputs.get(p.id)
            # what a layer is and the shape it hands on (its dtype where it is not float32, so
            # the shape fits the box); else how big the box is
            dtype = "" if out is None or out[0] == "float32" else out[0]
            cls = layer_attributes(self.hierarchy, p.id).get("class") or what
            sub = (
                f"{cls} → {dtype}{_fmt_shape(out[1])}"
                if out and g.kind == "layer"
                else f"{what} · {g.n_ops} ops"
            )
            return NodeItem(
                p.id,
                rect,
                g.label,
                sub,
                kind="group",
                on_path=g.on_path,
                badges=g.problems,
                tooltip=f"{g.kind} {g.label}: {g.n_ops} ops"
                + (f", output {out[0]}{_fmt_shape(out[1])}" if out else "")
                + "".join(f"\n{n} × {STYLES[c].label}" for c, n in g.problems.items()),
            )
        op = self.hierarchy.ops[p.id]
        kind = "target" if op.type == "Target" else "variable" if op.is_variable else "op"
        outs = ", ".join(f"{t.dtype}{_fmt_shape(t.shape)}" for t in op.outputs[:2])
        sub = op.type + (f" → {outs}" if outs else "")
        label = self.hierarchy.title(op.id)
        step = kind == "target" and self.report.mode == "program"
        if step:
            # the step's description is long ("Model.fit → …: tape.gradient at x.py:90"); the
            # node is the value the program differentiates, so it says so, and the tooltip says where
            label = "loss"
        return NodeItem(
            op.id,
            rect,
            label,
            sub,
            kind=kind,
            status=op.status,
            on_path=op.on_path,
            tooltip=lambda: self._op_tip(op, step),
        )

    def _op_tip(self, op, step: bool) -> str:
        """An op's tooltip: made when first hovered, not for each of a large graph's boxes."""
        assert self.report is not None  # items exist only with a report
        tip = f"{op.name}\n{op.type}" + (f"\n{op.message}" if op.message else "")
        if op.source:
            where = location(op.source.file, op.source.line, os.path.dirname(self.report.script))
            tip += f"\n{where}: {op.source.code}"
        return f"the loss of the gradient step\n{self.report.target}\n{tip}" if step else tip

    def helpEvent(self, event) -> None:  # noqa: N802 - Qt's name
        """Give the boxes under the pointer their tooltips before Qt looks for one."""
        for item in self.items(event.scenePos()):
            if isinstance(item, NodeItem):
                item.tip()
        super().helpEvent(event)

    def _drawing_edges(self, placed: Scene) -> Iterator[None]:
        assert self.hierarchy is not None and self.report is not None  # called by build, with a report
        merged: dict[tuple[str, str], list] = {}
        for i, e in enumerate(self.report.graph.edges, 1):
            if i % (STEP_EDGES * 10) == 0:
                yield
            if e.back or e.src not in self.hierarchy.ops or e.dst not in self.hierarchy.ops:
                continue
            a = self.hierarchy.representative(e.src, self.expanded)
            b = self.hierarchy.representative(e.dst, self.expanded)
            if a == b or a not in placed.nodes or b not in placed.nodes:
                continue
            if self.only_path and e.status == "off_path":
                continue
            merged.setdefault((a, b), []).append(e)
        lo, hi = self.magnitude_range()
        batches: dict[tuple, QPainterPath] = {}
        pens: dict[tuple, QPen] = {}
        batch_of: dict[tuple[str, str], tuple] = {}
        for i, ((a, b), es) in enumerate(merged.items(), 1):
            if i % STEP_EDGES == 0:
                yield
            pa, pb = placed.nodes[a], placed.nodes[b]
            start, end = QPointF(pa.x + pa.w / 2, pa.y + pa.h), QPointF(pb.x + pb.w / 2, pb.y)
            jump = placed.jumps.get((a, b))
            if jump is not None:  # into the next column of a wrapped group: up its gutter
                lane, low, high = jump
                path = _rounded(
                    [
                        start,
                        QPointF(start.x(), low),
                        QPointF(lane, low),
                        QPointF(lane, high),
                        QPointF(end.x(), high),
                        end,
                    ]
                )
            else:
                pts = [start, *(QPointF(x, y) for x, y in placed.routes.get((a, b), ())), end]
                path = QPainterPath(pts[0])
                for p0, p1 in zip(pts, pts[1:]):
                    dy = max(20.0, abs(p1.y() - p0.y()) / 2)
                    path.cubicTo(QPointF(p0.x(), p0.y() + dy), QPointF(p1.x(), p1.y() - dy), p1)
            self.edge_routes[(a, b)] = path
            status = worst(look(e) for e in es)
            cat = category(status)
            self.edge_cats[(a, b)] = cat
            self.edge_status[(a, b)] = status
            if self.magnitude:
                g = max((n for e in es if (n := carried_norm(e)) is not None), default=None)
                pen = magnitude_pen(g, lo, hi, arrives=any(e.status in CARRIES for e in es))
                key: tuple[object, ...] = (pen.color().name(), round(pen.widthF(), 1), pen.style())
            else:
                pen = pen_for(status)
                key = (cat,)
            tkey = (int(pa.x // TILE), int(pa.y // TILE)) + key
            batches.setdefault(tkey, QPainterPath()).addPath(path)
            pens[tkey] = pen
            batch_of[(a, b)] = tkey
            if cat not in QUIET:  # kept in the magnitude overlay too
                self._marker(path.pointAtPercent(0.5), cat, es)
        items = {}
        zs = {"off_path": -5, "muted": -4, "starved": -3, "passes": -1}
        for k, path in batches.items():
            items[k] = EdgeBatch(path, pens[k], zs.get(k[2], 0))
            self.addItem(items[k])
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
        self.addItem(t)

    # -- level of detail ------------------------------------------------------------
    def set_far(self, far: bool, scale: float) -> None:
        """Zoomed far out (``far``), per-tile overview paths stand in for the nodes; the
        problem marks keep their size on screen at ``scale``."""
        self.lod_scale = scale
        if self.marks is not None:
            self.marks.set_scale(scale)
        if far == self.far:
            return
        self.far = far
        for t in self.tiles:
            t.setVisible(not far)
        for o in self.overview:
            o.setVisible(far)

    def content_rect(self) -> QRectF:
        """The nodes and group frames (not the zoom-dependent problem marks)."""
        r = QRectF()
        for it in (*self.tiles, *self.frames.values()):
            r = r.united(it.sceneBoundingRect())
        return r
