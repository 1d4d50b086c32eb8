"""Hierarchical, lazy placement of a group tree.

Each expanded group's direct children are ordered once (the costly part) and
the ordering is cached; sizes and absolute positions are recomputed from the
cache on every expand/collapse, which is cheap. Every group is ordered by our own
layered layout; a small group it leaves crossings in is also sent to Graphviz
``dot`` when it is installed (:mod:`app.graph.layout.dot_order`, time-boxed, all groups
of a layout at once), and ``dot``'s ordering is kept when it has no more
crossings. When ``dot`` is missing, slow or fails, ours stays. A group whose layout is far
taller than wide is then cut into side-by-side columns (:mod:`app.graph.layout.columns`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from tfviz.structure.hierarchy import ROOT, Hierarchy

from . import columns, dot_order, layered

OP_SIZE = (170.0, 38.0)
#: the widest a box grows to hold a Python path (a variable, a captured tensor) whole
NAMED_MAX_W = 300.0
#: the title font's mean advance per character, and the box's margins and marker beside it
CHAR_W, TITLE_MARGIN = 7.0, 34.0
GROUP_SIZE = (200.0, 54.0)
PAD = 14.0
TITLE = 24.0


def op_size(h: Hierarchy, node: str) -> tuple[float, float]:
    """An op's box; one the user named (a variable, a captured tensor) is widened to fit its
    Python path, up to :data:`NAMED_MAX_W`, so the name a user looks for is not elided."""
    if node not in h.ops or not h.user_named(node):
        return OP_SIZE
    want = TITLE_MARGIN + CHAR_W * len(h.title(node))
    return (min(NAMED_MAX_W, max(OP_SIZE[0], want)), OP_SIZE[1])


@dataclass
class Placed:
    id: str
    x: float
    y: float
    w: float
    h: float
    kind: str  # op | group (collapsed) | frame (expanded group)


@dataclass
class Scene:
    nodes: dict[str, Placed]
    frames: list[Placed]
    routes: dict[tuple[str, str], list[tuple[float, float]]]  # dummy bend points, absolute
    width: float
    height: float
    layout_s: float
    #: the edges from one column of a wrapped group into the next (two boxes, as drawn) ->
    #: the gutter's x, the y below the column left and the y above the one entered, absolute
    jumps: dict[tuple[str, str], tuple[float, float, float]] = field(default_factory=dict)


class GraphLayout:
    def __init__(self, hierarchy: Hierarchy, use_dot: bool | None = None):
        """``use_dot``: None = when ``dot`` is installed; False = never (benchmarks, tests)."""
        self.hierarchy = hierarchy
        self.child_edges = hierarchy.child_edges()
        self._orderings: dict[tuple[str, bool], layered.Ordering] = {}
        self.use_dot = dot_order.dot_program() is not None if use_dot is None else use_dot
        self.engine: dict[tuple[str, bool], str] = {}  # which orderer laid out each group: dot | own
        #: one placement at a time: the window places on a thread of its own, and a placement
        #: asked for meanwhile on the GUI thread waits for it (both fill the caches above)
        self._placing = threading.Lock()

    def _edges_among(self, gid: str, kids: list[str]) -> list[tuple[str, str]]:
        ks = set(kids)
        return [(u, v) for u, v in self.child_edges.get(gid, ()) if u in ks and v in ks]

    def _prefetch_dot(self, expanded: set[str], only_path: bool) -> None:
        """Order every visible small group that has no ordering yet: ours first (a few ms for
        all of them), and ``dot`` (in one go) for those ours leaves crossings in; ``dot``'s
        is kept where it has no more crossings than ours. Where ours has none, which is
        every group of a gradient view we measured, no ``dot`` process is started at all."""
        jobs = {}
        own_crossings: dict[tuple[str, bool], int] = {}
        stack = [ROOT]
        while stack:
            gid = stack.pop()
            kids = self.visible_children(gid, only_path)
            stack.extend(c for c in kids if c in expanded and c in self.hierarchy.groups)
            key = (gid, only_path)
            if key in self._orderings or not dot_order.MIN_CHILDREN <= len(kids) <= dot_order.MAX_CHILDREN:
                continue
            edges = self._edges_among(gid, kids)
            o = layered.order(kids, edges)
            self._orderings[key], self.engine[key] = o, "own"
            crossed = layered.crossings(o)
            if crossed:
                own_crossings[key] = crossed
                sizes = {k: GROUP_SIZE if k in self.hierarchy.groups else OP_SIZE for k in kids}
                jobs[key] = (kids, edges, sizes)
        for key, o in dot_order.dot_orderings(jobs).items():
            if layered.crossings(o) <= own_crossings[key]:
                self._orderings[key], self.engine[key] = o, "dot"

    def visible_children(self, gid: str, only_path: bool) -> list[str]:
        h = self.hierarchy
        kids = h.groups[gid].children
        if not only_path:
            return kids
        return [c for c in kids if (h.groups[c].on_path if c in h.groups else h.ops[c].on_path)]

    def on_path_children(self, gid: str) -> set[str]:
        """The children of ``gid`` on the gradient path: x placement keeps the edges among
        them straight, so a chain from a variable to the target reads top to bottom."""
        h = self.hierarchy
        return {
            c for c in h.groups[gid].children if (h.groups[c].on_path if c in h.groups else h.ops[c].on_path)
        }

    def ordering(self, gid: str, only_path: bool) -> layered.Ordering:
        key = (gid, only_path)
        o = self._orderings.get(key)
        if o is None:
            kids = self.visible_children(gid, only_path)
            o = layered.order(kids, self._edges_among(gid, kids))
            self._orderings[key] = o
            self.engine[key] = "own"
        return o

    def place(self, expanded: set[str], only_path: bool = False) -> Scene:
        with self._placing:
            return self._place(expanded, only_path)

    def _place(self, expanded: set[str], only_path: bool) -> Scene:
        t0 = time.perf_counter()
        if self.use_dot:
            self._prefetch_dot(expanded, only_path)
        local: dict[str, dict[str, tuple[float, float]]] = {}
        local_jumps: dict[str, list[columns.Jump]] = {}
        sizes: dict[str, tuple[float, float]] = {}

        def size(node: str) -> tuple[float, float]:
            if node not in self.hierarchy.groups:
                return op_size(self.hierarchy, node)
            if node != ROOT and node not in expanded:
                return GROUP_SIZE
            o = self.ordering(node, only_path)
            kid_sizes = {}
            for L in o.layers:
                for n in L:
                    if not n.startswith("\0"):
                        kid_sizes[n] = sizes[n] = size(n)
            coords = layered.coordinates(o, kid_sizes, prefer=self.on_path_children(node))
            boxes = {n for n in kid_sizes if n in self.hierarchy.groups and n not in expanded}
            coords, local_jumps[node] = columns.wrap(o, coords, kid_sizes, boxes)
            local[node] = coords
            w = max((x + kid_sizes.get(n, (8, 0))[0] for n, (x, _) in coords.items()), default=0.0)
            h = max((y + kid_sizes.get(n, (0, 0))[1] for n, (_, y) in coords.items()), default=0.0)
            h = max([h, *(j.low + columns.JUMP / 2 for j in local_jumps[node])])
            pad_top = 0.0 if node == ROOT else TITLE
            return (w + 2 * PAD, h + 2 * PAD + pad_top)

        total = size(ROOT)
        nodes: dict[str, Placed] = {}
        frames: list[Placed] = []
        routes: dict[tuple[str, str], list[tuple[float, float]]] = {}
        jumps: dict[tuple[str, str], tuple[float, float, float]] = {}

        def absolute(gid: str, ox: float, oy: float) -> None:
            coords = local[gid]
            top = oy + PAD + (0.0 if gid == ROOT else TITLE)
            for n, (x, y) in coords.items():
                if n.startswith("\0"):
                    continue
                w, hh = sizes[n]
                ax, ay = ox + PAD + x, top + y
                if n in self.hierarchy.groups and n in expanded:
                    frames.append(Placed(n, ax, ay, w, hh, "frame"))
                    absolute(n, ax, ay)
                else:
                    nodes[n] = Placed(n, ax, ay, w, hh, "group" if n in self.hierarchy.groups else "op")
            for (u, v), chain in self.ordering(gid, only_path).chains.items():
                routes[(u, v)] = [(ox + PAD + coords[d][0] + 4, top + coords[d][1]) for d in chain]
            for j in local_jumps[gid]:
                jumps[(j.src, j.dst)] = (ox + PAD + j.lane, top + j.low, top + j.high)

        absolute(ROOT, 0.0, 0.0)
        return Scene(nodes, frames, routes, total[0], total[1], time.perf_counter() - t0, jumps)
