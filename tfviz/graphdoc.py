"""The analysed networkx graph as a plain, JSON-ready document."""

from __future__ import annotations

import networkx as nx

from tfviz.report import (
    EDGE_OFF_PATH,
    EDGE_PASSES,
    GraphDoc,
    GraphEdge,
    GraphFunction,
    GraphOp,
    Problem,
)


def graph_doc(
    g: nx.DiGraph,
    union: set[str],
    norms: dict[tuple[str, int], float],
    problems: dict[tuple[str, str], Problem],
    nan_ops: list[str],
    functions: list[GraphFunction],
) -> GraphDoc:
    """Ops and edges with their gradient status; ops on no path are ``off_path``."""
    node_status: dict[str, tuple[str, str]] = {}
    for (kind, op), p in problems.items():
        if op:
            node_status.setdefault(op, (kind, p.message))
    for n in nan_ops[:1]:
        node_status.setdefault(n, ("nan", "the gradient first becomes non-finite here"))
    # A call op whose body is inlined is drawn as that body's group; with no
    # edges of its own it would be a stray box.
    callers = {f.call_op for f in functions}
    ops: list[GraphOp] = []
    for nid, d in g.nodes(data=True):
        if nid in callers and g.degree(nid) == 0:
            continue
        on = nid in union
        status, message = node_status.get(nid, (EDGE_PASSES if on else EDGE_OFF_PATH, ""))
        outs = [norms[(nid, i)] for i in range(len(d.get("outputs", []))) if (nid, i) in norms]
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
                grad_norm=max(outs) if outs else None,
                is_variable=bool(d.get("is_variable")),
            )
        )
    edges: list[GraphEdge] = []
    for u, v, e in g.edges(data=True):
        on = u in union and v in union
        status = e.get("status", EDGE_PASSES) if on else EDGE_OFF_PATH
        for src_out, dst_in in e["ports"]:
            edges.append(
                GraphEdge(
                    src=u,
                    dst=v,
                    src_output=src_out,
                    dst_input=dst_in,
                    dtype=e["dtype"],
                    shape=e.get("shape"),
                    status=status,
                    grad_norm=norms.get((u, src_out)) if on else None,
                    back=bool(e.get("back")),
                )
            )
    return GraphDoc(ops=ops, edges=edges, functions=list(functions))

