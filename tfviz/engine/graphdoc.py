"""The analyzed networkx graph as a plain, JSON-ready document."""

from __future__ import annotations

import math
from collections import deque

import networkx as nx

from tfviz.report import (
    EDGE_OFF_PATH,
    EDGE_PASSES,
    EDGE_STARVED,
    GraphDoc,
    GraphEdge,
    GraphFunction,
    GraphOp,
    Problem,
)
from tfviz.vocabulary import Kind


def graph_doc(
    g: nx.DiGraph[str],
    union: set[str],
    norms: dict[tuple[str, int], float],
    problems: dict[tuple[str, str, str], Problem],
    nan_ops: list[str],
    functions: list[GraphFunction],
    reach: set[str] | None = None,
    needed: set[tuple[str, str]] | None = None,
) -> GraphDoc:
    """Ops and edges with their gradient status; ops on no path are ``off_path``.

    With ``reach`` (the ops a gradient from the target arrives at), an on-path op or
    passing edge that no gradient reaches is ``starved``, with ``cut_at`` naming the
    nearest cut toward the target. With ``needed`` (cut edges some variable's
    verdict rests on), every other cut is marked ``needed=False``: it blocks nothing.
    """
    node_status: dict[str, tuple[str, str]] = {}
    for (kind, op, _group), p in problems.items():
        if op:
            node_status.setdefault(op, (kind, p.message))
    for n in nan_ops[:1]:
        node_status.setdefault(n, (Kind.NAN, "the gradient first becomes non-finite here"))
    # A call op whose body is inlined is drawn as that body's group; with no
    # edges of its own it would be a stray box.
    callers = {f.call_op for f in functions}
    cut_at = _cut_at(g, union, reach, node_status) if reach is not None else {}
    ops: list[GraphOp] = []
    passing, off_path = (EDGE_PASSES, ""), (EDGE_OFF_PATH, "")
    for nid, d in g.nodes(data=True):
        if nid in callers and g.degree(nid) == 0:
            continue
        on = nid in union
        status, message = node_status.get(nid) or (passing if on else off_path)
        cut = cut_at.get(nid, "") if status == EDGE_PASSES else ""
        if cut:
            status = EDGE_STARVED
            message = f"no gradient arrives here: cut at {_name(g, cut)}"
        outs = [x for i in range(len(d.get("outputs", ()))) if (x := norms.get((nid, i))) is not None]
        if status == EDGE_PASSES and not all(map(math.isfinite, outs)):
            message = NAN_CARRIED  # its edges say NaN; the op's own mark stays for where it starts
        ops.append(
            GraphOp(
                id=nid,
                name=d.get("name", nid),
                type=d.get("type", ""),
                scope=d.get("scope", ""),
                group=d.get("group", ""),
                outputs=list(d.get("outputs", [])),
                source=d.get("source"),
                on_path=on,
                status=status,
                message=message,
                # no gradient arrives at a starved op: whatever a loop's zeros measured is no size
                grad_norm=max(outs) if outs and status != EDGE_STARVED else None,
                is_variable=bool(d.get("is_variable")),
                cut_at=cut,
                label=d.get("label") or "",
            )
        )
    edges: list[GraphEdge] = []
    for u, v, e in g.edges(data=True):
        on = u in union and v in union
        status = e.get("status", EDGE_PASSES) if on else EDGE_OFF_PATH
        cut = cut_at.get(v, "") if status == EDGE_PASSES else ""
        if cut:
            status = EDGE_STARVED
        need = needed is None or status in (EDGE_PASSES, EDGE_OFF_PATH, EDGE_STARVED) or (u, v) in needed
        for src_out, dst_in in e["ports"]:
            carried = norms.get((u, src_out)) if on else None
            if status == EDGE_PASSES and carried is not None and not math.isfinite(carried):
                status = Kind.NAN  # the gradient it carries back is NaN or infinite
            edges.append(
                GraphEdge(
                    src=u,
                    dst=v,
                    src_output=src_out,
                    dst_input=dst_in,
                    dtype=e["dtype"],
                    shape=e.get("shape"),
                    status=status,
                    grad_norm=norms.get((u, src_out)) if on and status != EDGE_STARVED else None,
                    back=bool(e.get("back")),
                    cut_at=cut,
                    needed=need,
                )
            )
    return GraphDoc(ops=ops, edges=edges, functions=list(functions))


def mark_op(doc: GraphDoc | None, nid: str, status: str, message: str) -> None:
    """Give the op ``nid`` of ``doc`` a status and what it says, where a problem moved to it
    after the graph was made (the op that made a NaN or a zero in the forward pass)."""
    for op in doc.ops if doc is not None else ():
        if op.id == nid:
            op.status, op.message = status, message


#: what an op says whose own output's gradient is NaN or infinite, where the problem is elsewhere
NAN_CARRIED = "the gradient here is NaN or infinite: it carries back a non-finite gradient"


def _name(g: nx.DiGraph[str], nid: str) -> str:
    d = g.nodes[nid]
    return f"{d.get('type', '?')} '{d.get('name', nid)}'"


def _cut_at(
    g: nx.DiGraph[str], union: set[str], reach: set[str], node_status: dict[str, tuple[str, str]]
) -> dict[str, str]:
    """For each on-path op no gradient reaches, the nearest op toward the target where
    the gradient is cut: a problem op on the way if there is one, else the consumer of
    the cut edge. One backward walk from all cuts at once (linear in the graph).

    >>> g = nx.DiGraph()
    >>> g.add_edge("w", "read", status="passes")
    >>> g.add_edge("read", "sg", status="stop_gradient")
    >>> g.add_edge("sg", "t", status="passes")
    >>> _cut_at(g, {"w", "read", "sg", "t"}, {"sg", "t"}, {})
    {'read': 'sg', 'w': 'sg'}
    """
    starved = union - reach
    label: dict[str, str] = {}
    queue: deque[str] = deque()
    for n in sorted(starved):
        if n in node_status:  # a problem op no gradient reaches (a Cast upstream of its cut)
            label[n] = n
            queue.append(n)
    for x in sorted(starved):
        if x in label:
            continue
        ys = sorted(y for y in g.successors(x) if y in union and y in reach)
        if ys:
            label[x] = ys[0]
            queue.append(x)
    while queue:
        x = queue.popleft()
        for u in g.predecessors(x):
            if u in starved and u not in label:
                label[u] = label[x]
                queue.append(u)
    return dict(sorted(label.items()))
