"""Layered (Sugiyama-style) layout in plain Python, fast enough for thousands of nodes.

Longest-path layering from the sources (inputs and variables at the top, the
target at the bottom), sources pulled down next to their first consumer, dummy
nodes on long edges, crossing reduction (below), then a two-sided compaction
for x.

Crossing reduction is in :mod:`app.graph.crossings`. It starts from a
depth-first search up from the sinks (the target), which lays a model out as
the tree of inputs it is: started down from the sources, the same sweeps left
102 crossings on ResNet50's gradient view; started from the target, 16, which
the side-chain moves then remove. A small graph with crossings left is also
ordered from the sources, and the better of the two kept.

Returns the ordering separately from coordinates, so a caller can cache the
expensive part and redo coordinates when sizes change (a child group expanded
or collapsed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.graph import crossings as _crossings

H_GAP = 24.0
V_GAP = 46.0
#: Up to this many nodes (dummies included), a graph with crossings left is ordered a second
#: time from a DFS down from the sources, and the better of the two kept. It costs as much
#: again; a layer's group is far below this, and fewer crossings in a flat graph of thousands
#: of ops are not worth doubling its layout time.
SECOND_START_MAX = 1000


@dataclass
class Ordering:
    layers: list[list[str]]  # includes dummy ids ("\0dN")
    edges: list[tuple[str, str]]  # edges of the proper (dummy-expanded) graph
    chains: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # real edge -> dummies
    _pred: dict[str, list[str]] | None = field(default=None, repr=False, compare=False)

    def pred(self) -> dict[str, list[str]]:
        """Each node's predecessors, built once: :func:`coordinates` runs on every expand."""
        if self._pred is None:
            self._pred = {}
            for u, v in self.edges:
                self._pred.setdefault(v, []).append(u)
        return self._pred


def _layering(n_nodes: int, edges: list[tuple[int, int]]) -> tuple[list[int], list[tuple[int, int]]]:
    """Longest-path layers of nodes ``0..n_nodes-1``; returns layers and the acyclic edges kept."""
    succ: list[list[int]] = [[] for _ in range(n_nodes)]
    indeg = [0] * n_nodes
    seen: set[int] = set()
    for u, v in edges:
        key = u * n_nodes + v
        if u == v or key in seen:
            continue
        seen.add(key)
        succ[u].append(v)
        indeg[v] += 1
    # Kahn's algorithm; on a cycle, drop the in-edges of the node with the fewest.
    layer = [0] * n_nodes
    ready = [n for n in range(n_nodes) if indeg[n] == 0]
    done = [False] * n_nodes
    topo: list[int] = []
    kept: list[tuple[int, int]] = []
    remaining = set(range(n_nodes))
    while remaining:
        while ready:
            u = ready.pop()
            if done[u]:
                continue
            done[u] = True
            topo.append(u)
            remaining.discard(u)
            lu = layer[u] + 1
            for v in succ[u]:
                if done[v]:
                    continue
                kept.append((u, v))
                if lu > layer[v]:
                    layer[v] = lu
                indeg[v] -= 1
                if indeg[v] == 0:
                    ready.append(v)
        if remaining:
            ready.append(min(remaining, key=lambda n: (indeg[n], n)))
    # Pull every node down next to its earliest consumer (as late as possible):
    # side chains such as variable reads then sit beside the op that uses them
    # instead of at the top with edges hundreds of layers long.
    ksucc: list[list[int]] = [[] for _ in range(n_nodes)]
    for u, v in kept:
        ksucc[u].append(v)
    for n in reversed(topo):
        vs = ksucc[n]
        if vs:
            layer[n] = max(layer[n], min(layer[v] for v in vs) - 1)
    return layer, kept


def order(nodes: list[str], edges: list[tuple[str, str]], sweeps: int = 2) -> Ordering:
    """Layer ``nodes`` and order each layer to reduce edge crossings (``sweeps``: barycenter
    sweeps of :func:`app.graph.crossings.reduce_crossings`).

    Works on integer ids internally: dict lookups on strings were most of the
    time for a few thousand nodes.
    """
    if not nodes:
        return Ordering([], [])
    idx = {n: i for i, n in enumerate(nodes)}
    int_edges = [(idx[u], idx[v]) for u, v in edges if u in idx and v in idx]
    lay, kept = _layering(len(nodes), int_edges)
    names = list(nodes)
    proper: list[tuple[int, int]] = []
    chains: dict[tuple[str, str], list[str]] = {}
    for u, v in kept:
        lu, lv = lay[u], lay[v]
        if lv - lu <= 1:
            proper.append((u, v))
            continue
        prev, chain = u, []
        for li in range(lu + 1, lv):
            d = len(names)
            names.append(f"\0d{d - len(nodes)}")
            lay.append(li)
            chain.append(names[d])
            proper.append((prev, d))
            prev = d
        proper.append((prev, v))
        chains[(names[u], names[v])] = chain
    total = len(names)
    nlay = max(lay) + 1
    succ: list[list[int]] = [[] for _ in range(total)]
    pred: list[list[int]] = [[] for _ in range(total)]
    for u, v in proper:
        succ[u].append(v)
        pred[v].append(u)
    layers = _initial(lay, nlay, pred, succ)
    left = _crossings.reduce_crossings(layers, pred, succ, lay, sweeps)
    if left and total <= SECOND_START_MAX:
        down = _initial(lay, nlay, succ, pred)
        if _crossings.reduce_crossings(down, pred, succ, lay, sweeps) < left:
            layers = down
    return Ordering(
        [[names[n] for n in L] for L in layers],
        [(names[u], names[v]) for u, v in proper],
        chains,
    )


def coordinates(
    ordering: Ordering, size: dict[str, tuple[float, float]], dummy_w: float = 8.0
) -> dict[str, tuple[float, float]]:
    """Top-left corner of every node (dummies included), from the cached ordering."""
    pred = ordering.pred()
    cx: dict[str, float] = {}
    y = 0.0
    out: dict[str, tuple[float, float]] = {}
    for L in ordering.layers:
        w = [size.get(n, (dummy_w, 0.0))[0] for n in L]
        want = []
        x = 0.0
        for n, wn in zip(L, w):
            ps = pred.get(n)
            if ps is not None and len(ps) == 1 and ps[0] in cx:  # most nodes: one input
                want.append(cx[ps[0]])
            elif ps and (px := sorted([cx[p] for p in ps if p in cx])):
                want.append(px[len(px) // 2])
            else:
                want.append(x + wn / 2)
            x += wn + H_GAP
        # push right so nodes do not overlap, then push left, and average the two
        right, left = list(want), list(want)
        for i in range(1, len(L)):
            right[i] = max(right[i], right[i - 1] + (w[i - 1] + w[i]) / 2 + H_GAP)
        for i in range(len(L) - 2, -1, -1):
            left[i] = min(left[i], left[i + 1] - (w[i + 1] + w[i]) / 2 - H_GAP)
        xs = [(a + b) / 2 for a, b in zip(right, left)]
        for i in range(1, len(L)):  # averaging can reintroduce overlap; fix it
            xs[i] = max(xs[i], xs[i - 1] + (w[i - 1] + w[i]) / 2 + H_GAP)
        hs = [size.get(n, (0.0, 0.0))[1] for n in L]
        h = max(hs, default=0.0)
        for n, c, wn, hn in zip(L, xs, w, hs):
            cx[n] = c
            out[n] = (c - wn / 2, y + (h - (hn if n in size else h)) / 2)
        y += h + V_GAP
    if out:
        minx = min(x for x, _ in out.values())
        out = {n: (x - minx, y0) for n, (x, y0) in out.items()}
    return out


def crossings(ordering: Ordering) -> int:
    """Edge crossings between adjacent layers of the proper graph (quality measure)."""
    return _crossings.count(ordering.layers, ordering.edges)


def _initial(lay: list[int], nlay: int, nbrs: list[list[int]], other: list[list[int]]) -> list[list[int]]:
    """Layers in depth-first order from the nodes with no ``other`` neighbours, along ``nbrs``
    (up from the sinks: ``nbrs`` = predecessors): a DFS keeps each branch's nodes together
    and side by side, as in a tree drawing."""
    total = len(lay)
    layers: list[list[int]] = [[] for _ in range(nlay)]
    seen = [False] * total
    for root in range(total):
        if seen[root] or other[root]:
            continue
        stack = [root]
        while stack:
            n = stack.pop()
            if seen[n]:
                continue
            seen[n] = True
            layers[lay[n]].append(n)
            stack.extend(reversed(nbrs[n]))
    for n in range(total):
        if not seen[n]:
            layers[lay[n]].append(n)
    return layers
