"""A node's gradient path, for the path view (pure graph walk, no Qt).

A variable's path runs from the variable to the target, or, when its gradient is cut,
to the op where it is cut (``blocked_at``). An op's path is every on-path way through
it: the ops upstream of it that a variable feeds, and the ops from it to the target.
``hops`` is one shortest such way, hop by hop, for the Details panel; :func:`route` reads
it in layers, for ``tfviz check``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tfviz.report import EDGE_PASSES, EDGE_STARVED, GraphEdge, GraphOp, Report
from tfviz.structure.hierarchy import Hierarchy
from tfviz.vocabulary import Flow, Kind

#: op statuses at which a gradient arrives (zero and NaN ones included)
_ARRIVES = frozenset({EDGE_PASSES, Kind.ZERO, Kind.NAN, Kind.NOT_TRAINED, Kind.VANISHING, Kind.EXPLODING})

TARGET = "__target__"


@dataclass
class Hop:
    op: str  # graph node id
    name: str  # as the graph titles it: a captured tensor by its Python path
    type: str
    shape: str  # the tensor passed to the next hop (the op's own output for the last)
    status: str  # what happens to the gradient there
    grad_norm: float | None


@dataclass
class GradientPath:
    start: str
    end: str  # the target, or the op where the gradient is cut
    ops: set[str] = field(default_factory=set)
    hops: list[Hop] = field(default_factory=list)
    cut: bool = False


#: an edge's end a walk goes toward: its ``dst`` forward, its ``src`` backward
_End = Callable[[GraphEdge], str]
#: node -> the edge a breadth-first walk reached it by (None for a start)
_Reached = dict[str, GraphEdge | None]
_Adjacency = dict[str, list[GraphEdge]]


def _shape(shape: list[int | None] | None) -> str:
    return "?" if shape is None else "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _adjacency(report: Report) -> tuple[_Adjacency, _Adjacency]:
    succ: _Adjacency = {}
    pred: _Adjacency = {}
    for e in report.graph.edges:
        if e.back or e.status == Flow.OFF_PATH:
            continue
        succ.setdefault(e.src, []).append(e)
        pred.setdefault(e.dst, []).append(e)
    return succ, pred


def _reach(starts: Iterable[str], adj: _Adjacency, end_of: _End) -> _Reached:
    """BFS from ``starts``; node -> the edge it was reached by (None for a start)."""
    seen: _Reached = {s: None for s in starts}
    q = deque(starts)
    while q:
        n = q.popleft()
        for e in adj.get(n, ()):
            m = end_of(e)
            if m not in seen:
                seen[m] = e
                q.append(m)
    return seen


def gradient_path(report: Report, node: str, members: list[str] | None = None) -> GradientPath:
    """The path of ``node`` (a variable ``var:NAME``, an op, or a group whose ``members`` are
    its ops)."""
    ops = {o.id: o for o in report.graph.ops}
    succ, pred = _adjacency(report)
    fwd: _End = lambda e: e.dst
    bwd: _End = lambda e: e.src
    starts = [m for m in (members or [node]) if m in ops]
    var = next((v for v in report.variables if f"var:{v.name}" == node), None)
    if not starts:  # not in this graph (a stale selection)
        return GradientPath(node, node)
    if var is not None:
        end = next((b for b in var.blocked_at if b in ops), TARGET)
        down = _reach([node], succ, fwd)
        up = _reach([end], pred, bwd)
        on = (set(down) & set(up)) | {node, end}
        chain = _walk(node, end, down, fwd)
        out = GradientPath(node, end, on, cut=end != TARGET)
    elif (cut := _cut_of_starved(ops, starts)) is not None:
        # no gradient arrives anywhere in it: the path ends where the gradient is cut, as
        # each of its variables' paths does, never at a target whose gradient never comes
        first, end = cut
        down = _reach(starts, succ, fwd)
        up = _reach([end], pred, bwd)
        on = (set(down) & set(up)) | set(starts) | {end}
        chain = _walk(first, end, _reach([first], succ, fwd), fwd)
        out = GradientPath(node, end, on, cut=True)
    else:
        down = _reach(starts, succ, fwd)
        to_target = _reach([TARGET], pred, bwd)
        up = _reach(starts, pred, bwd)
        feeding = set(_reach([v for v in up if v.startswith("var:")], succ, fwd))
        on = (set(down) & set(to_target)) | (set(up) & feeding) | set(starts)
        first_var = next((v for v in up if v.startswith("var:")), None)  # BFS order: the nearest
        chain = _walk(first_var, starts[0], _reach([first_var], succ, fwd), fwd) if first_var else []
        tail = _walk(starts[0], TARGET, down, fwd) if TARGET in down else [starts[0]]
        chain = chain[:-1] + tail if chain else tail
        out = GradientPath(node, TARGET if TARGET in down else chain[-1], on)
    out.hops = _hops(report, ops, chain)
    return out


def _cut_of_starved(ops: dict[str, GraphOp], starts: list[str]) -> tuple[str, str] | None:
    """(a starved start, the op where its gradient is cut) when no gradient arrives at any
    op of ``starts`` (each is starved, or is the cut itself); None when one arrives."""
    on = [ops[s] for s in starts if ops[s].on_path or ops[s].status == EDGE_STARVED]
    if any(o.status in _ARRIVES for o in on):
        return None
    first = next((o for o in on if o.cut_at in ops), None)
    return (first.id, first.cut_at) if first is not None else None


def _walk(start: str, end: str, seen: _Reached, end_of: _End) -> list[str]:
    """The BFS chain from ``start`` to ``end`` (forward BFS tree ``seen``), start first."""
    if end not in seen:
        return [start] if start else []
    out = [end]
    n = end
    while (edge := seen.get(n)) is not None and n != start:
        n = edge.src
        out.append(n)
    out.reverse()
    return out


def _hops(report: Report, ops: dict[str, GraphOp], chain: list[str]) -> list[Hop]:
    by_pair: dict[tuple[str, str], GraphEdge] = {}
    for edge in report.graph.edges:
        if not edge.back:
            by_pair.setdefault((edge.src, edge.dst), edge)
    out = []
    for i, n in enumerate(chain):
        op = ops.get(n)
        if op is None:
            continue
        e = by_pair.get((n, chain[i + 1])) if i + 1 < len(chain) else None
        if e is not None:
            status = op.status if op.status not in (Flow.PASSES, Flow.OFF_PATH) else e.status
            shape, norm = f"{e.dtype}{_shape(e.shape)}", e.grad_norm
        else:
            t = op.outputs[0] if op.outputs else None
            shape = f"{t.dtype}{_shape(t.shape)}" if t else ""
            status, norm = op.status, op.grad_norm
        if op.is_variable:
            v = next((v for v in report.variables if f"var:{v.name}" == n), None)
            if v is not None:
                shape, norm = f"{v.dtype}{_shape(v.shape)}", v.grad_norm
        out.append(Hop(n, op.label or op.name, op.type, shape, status, norm))
    return out


def route(h: Hierarchy, path: GradientPath, most: int = 7) -> list[str]:
    """A path as the window's boxes name it: where it starts, the Keras layers it crosses (an
    op outside every layer by its own name), and the op where it ends. A path of hundreds of
    ops reads as a dozen layers; past ``most`` names the middle is elided.

    >>> from tfviz.report import GraphDoc
    >>> h = Hierarchy(GraphDoc())
    >>> route(h, GradientPath("a", "d", hops=[Hop(x, x, "Op", "", "passes", None) for x in "abbcd"]))
    ['a', 'b', 'c', 'd']
    """
    names: list[str] = []

    def add(name: str | None) -> None:
        if name and (not names or names[-1] != name):
            names.append(name)

    def own(hop: Hop) -> str:
        return h.display_name(hop.op) if hop.op in h.ops else hop.name

    if not path.hops:
        return names
    add(own(path.hops[0]))
    for hop in path.hops[1:-1]:
        add(h.layer_of(hop.op) or own(hop))
    if len(path.hops) > 1:
        add(h.layer_of(path.hops[-1].op))
        add(own(path.hops[-1]))
    if len(names) > most:
        keep = (most - 1) // 2
        names = [*names[:keep], f"… {len(names) - 2 * keep} more …", *names[-keep:]]
    return names
