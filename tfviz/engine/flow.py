"""Where gradients flow, on a plain networkx graph.

Edges carry a ``status``: ``"passes"`` when the consumer's gradient reaches
that input, otherwise the kind of cut. These functions know nothing about
TensorFlow, which keeps them small and testable on toy graphs.

>>> import networkx as nx
>>> g = nx.DiGraph()
>>> g.add_edge("w", "cast", status="integer")
>>> g.add_edge("v", "mul", status="passes")
>>> g.add_edge("cast", "mul", status="passes")
>>> g.add_edge("mul", "loss", status="passes")
>>> sorted(gradient_reach(g, "loss"))
['cast', 'loss', 'mul', 'v']
>>> frontier_cuts(g, path_region(g, "w", "loss"), gradient_reach(g, "loss"))
[('w', 'cast')]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import networkx as nx

from tfviz.report import EDGE_PASSES, RAISING_KINDS
from tfviz.vocabulary import Kind


def passes(g: nx.DiGraph[str], u: str, v: str) -> bool:
    return g.edges[u, v].get("status") == EDGE_PASSES


def gradient_reach(g: nx.DiGraph[str], target: str, also_pass: Iterable[str] = ()) -> set[str]:
    """Nodes whose outputs receive a gradient from ``target``.

    ``also_pass`` names ops whose raising gradient is treated as if it worked,
    to ask what would flow without them.

    >>> g = nx.DiGraph()
    >>> g.add_edges_from([("a", "b"), ("b", "t")], status="passes")
    >>> g.edges["a", "b"]["status"] = "stop_gradient"
    >>> sorted(gradient_reach(g, "t"))
    ['b', 't']
    """
    extra = set(also_pass)
    seen = {target}
    queue = deque([target])
    while queue:
        v = queue.popleft()
        for u in g.predecessors(v):
            if u in seen:
                continue
            status = g.edges[u, v].get("status")
            if status == EDGE_PASSES or (v in extra and status in RAISING_KINDS):
                seen.add(u)
                queue.append(u)
    return seen


def ancestors_of(g: nx.DiGraph[str], target: str) -> set[str]:
    return nx.ancestors(g, target) | {target}


def last_made_from(g: nx.DiGraph[str], starts: Iterable[str], anc: set[str]) -> dict[str, str]:
    """For each of ``starts`` with no path to the target (``anc``: the target's ancestors),
    the last op computed from it: where what is made from it stops, a value the target
    never uses (or one the program took out of the graph, ``.numpy()``). "Last" is by the
    graph's node order, the order its ops ran. One pass over the region off the target's
    ancestors; a region with a loop in it (a while loop's back edge) answers nothing.

    >>> g = nx.DiGraph([("w", "read"), ("read", "shape"), ("read", "mul"), ("mul", "sub"), ("c", "t")])
    >>> last_made_from(g, ["w", "c"], {"c", "t"})
    {'w': 'sub'}
    """
    starts = [s for s in starts if s not in anc]
    if not starts:
        return {}
    dead = g.subgraph(n for n in g if n not in anc)
    try:
        ordered = list(nx.topological_sort(dead))
    except nx.NetworkXUnfeasible:
        return {}
    order = {n: i for i, n in enumerate(g)}
    latest: dict[str, str] = {}
    for n in reversed(ordered):
        best: str | None = None
        for s in dead.successors(n):
            for c in (s, latest.get(s)):
                if c is not None and (best is None or order[c] > order[best]):
                    best = c
        if best is not None:
            latest[n] = best
    return {s: latest[s] for s in starts if s in latest}


def path_region(g: nx.DiGraph[str], source: str, target: str, anc: set[str] | None = None) -> set[str]:
    """Nodes on some path from ``source`` to ``target``, ignoring gradient status.

    >>> g = nx.DiGraph([("v", "a"), ("a", "t"), ("v", "b")])
    >>> sorted(path_region(g, "v", "t"))
    ['a', 't', 'v']
    """
    anc = anc if anc is not None else ancestors_of(g, target)
    if source not in anc:
        return set()
    return (nx.descendants(g, source) | {source}) & anc


def union_region(
    g: nx.DiGraph[str], sources: Iterable[str], target: str, anc: set[str] | None = None
) -> set[str]:
    """Nodes on some path from any of ``sources`` to ``target``: the union of their
    :func:`path_region`, in one walk instead of one per source (a model of 1,000 layers has
    2,000 variables).

    >>> g = nx.DiGraph([("v", "a"), ("a", "t"), ("w", "b"), ("b", "t"), ("v", "x")])
    >>> sorted(union_region(g, ["v", "w", "nowhere"], "t"))
    ['a', 'b', 't', 'v', 'w']
    """
    anc = anc if anc is not None else ancestors_of(g, target)
    starts = [s for s in sources if s in anc]
    seen = set(starts)
    queue = deque(starts)
    while queue:
        u = queue.popleft()
        for v in g.successors(u):
            if v in anc and v not in seen:
                seen.add(v)
                queue.append(v)
    return seen


class Regions(dict[str, set[str]]):
    """Each variable's :func:`path_region`, computed the first time it is asked for: a
    healthy variable's verdict never needs its own region, so a large healthy model costs
    one walk (:func:`union_region`), not one per variable."""

    def __init__(self, g: nx.DiGraph[str], nodes: dict[str, str], target: str, anc: set[str]):
        super().__init__()
        self._g, self._nodes, self._target, self._anc = g, nodes, target, anc

    def __missing__(self, key: str) -> set[str]:
        region = self[key] = path_region(self._g, self._nodes[key], self._target, self._anc)
        return region


def frontier_cuts(
    g: nx.DiGraph[str], region: set[str], reach: set[str], start: str | None = None
) -> list[tuple[str, str]]:
    """Cut edges inside ``region`` whose consumer still receives a gradient.

    These are the places where the chain breaks, seen walking back from the
    target: the gradient arrives at the consumer and stops there. With
    ``start`` (the variable), only the cuts its value meets first count: a
    comparison inside the loss (``logits >= 0`` choosing a branch) is cut too,
    but the variable's value reaches it only past the real cut, so removing it
    would change nothing. When no cut is met first (a chain of casts), all count.

    >>> g = nx.DiGraph()
    >>> g.add_edges_from([("w", "act"), ("act", "logits"), ("logits", "ge"), ("ge", "sel"),
    ...                   ("logits", "sel"), ("sel", "t")], status="passes")
    >>> g.edges["w", "act"]["status"] = g.edges["ge", "sel"]["status"] = "integer"
    >>> region, reach = path_region(g, "w", "t"), gradient_reach(g, "t")
    >>> frontier_cuts(g, region, reach), frontier_cuts(g, region, reach, "w")
    ([('ge', 'sel'), ('w', 'act')], [('w', 'act')])
    """
    out = []
    for v in region & reach:
        for u in g.predecessors(v):
            if u in region and not passes(g, u, v) and u not in reach:
                out.append((u, v))
    if start is not None:
        before = short_of(g, start, region, reach)
        out = [(u, v) for u, v in out if u in before] or out
    return sorted(out)


def short_of(g: nx.DiGraph[str], start: str, region: set[str], reach: set[str]) -> set[str]:
    """Nodes of ``region`` that ``start``'s value reaches before any node a gradient reaches.

    A cut whose producer is among them is where this value's chain breaks;
    a cut met only after the chain was whole again is another value's.
    """
    seen, queue = {start}, deque([start])
    while queue:
        u = queue.popleft()
        for v in g.successors(u):
            if v in region and v not in seen and v not in reach:
                seen.add(v)
                queue.append(v)
    return seen


def live_raisers(g: nx.DiGraph[str], region: set[str], reach: set[str]) -> set[str]:
    """Ops in ``region`` whose gradient raises and that a gradient reaches.

    TensorFlow calls an op's gradient function only when some output gets a
    gradient; then one raising op fails the whole ``tape.gradient`` call.

    >>> g = nx.DiGraph()
    >>> g.add_edge("v", "svd", status="unimplemented")
    >>> g.add_edge("svd", "t", status="passes")
    >>> sorted(live_raisers(g, {"v", "svd", "t"}, gradient_reach(g, "t")))
    ['svd']
    """
    out = set()
    for v in region & reach:
        for u in g.predecessors(v):
            if u in region and g.edges[u, v].get("status") in RAISING_KINDS:
                out.add(v)
    return out


def integer_origins(
    g: nx.DiGraph[str], region: set[str], start: str, differentiable: Iterable[str]
) -> list[str]:
    """The ops in ``region`` that turn a float into the integer value ``start`` outputs.

    A cut found walking back from the target lands on the last consumer of an
    integer (a ``Pack`` of indices, say); the user's mistake is upstream, at
    the ``Cast``/``ArgMax`` whose float input became integer. Walks back along
    integer edges and returns those ops (``start`` itself when none is found).

    >>> g = nx.DiGraph()
    >>> g.add_edge("read", "cast", status="integer", dtype="float32")
    >>> g.add_edge("cast", "pack", status="integer", dtype="int32")
    >>> g.add_edge("one", "pack", status="integer", dtype="int32")
    >>> g.add_edge("pack", "tofloat", status="integer", dtype="int32")
    >>> integer_origins(g, {"read", "cast", "pack", "tofloat"}, "pack", {"float32"})
    ['cast']
    """
    floats = set(differentiable)
    seen, queue, out = {start}, deque([start]), []
    while queue:
        x = queue.popleft()
        ins = [u for u in g.predecessors(x) if u in region]
        if any(
            g.edges[u, x].get("dtype") in floats and g.edges[u, x].get("status") == Kind.INTEGER for u in ins
        ):
            out.append(x)
            continue
        for u in ins:
            if u not in seen and g.edges[u, x].get("dtype") not in floats:
                seen.add(u)
                queue.append(u)
    return sorted(out) or [start]
