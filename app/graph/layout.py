"""Layered (Sugiyama-style) layout in plain Python, fast enough for thousands of nodes.

Longest-path layering from the sources (inputs and variables at the top, the
target at the bottom), sources pulled down next to their first consumer, dummy
nodes on long edges, barycenter sweeps to reduce crossings, then a two-sided
compaction for x. Returns the ordering separately from coordinates, so a
caller can cache the expensive part and redo coordinates when sizes change
(a child group expanded or collapsed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

H_GAP = 24.0
V_GAP = 46.0


@dataclass
class Ordering:
    layers: list[list[str]]  # includes dummy ids ("\0dN")
    edges: list[tuple[str, str]]  # edges of the proper (dummy-expanded) graph
    chains: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # real edge -> dummies


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


def order(nodes: list[str], edges: list[tuple[str, str]], sweeps: int = 4) -> Ordering:
    """Layer ``nodes`` and order each layer to reduce edge crossings.

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
    layers: list[list[int]] = [[] for _ in range(nlay)]
    succ: list[list[int]] = [[] for _ in range(total)]
    pred: list[list[int]] = [[] for _ in range(total)]
    for u, v in proper:
        succ[u].append(v)
        pred[v].append(u)
    # Initial order: DFS from sources keeps chains together.
    seen = [False] * total
    for root in range(len(nodes)):
        if seen[root] or pred[root]:
            continue
        stack = [root]
        while stack:
            n = stack.pop()
            if seen[n]:
                continue
            seen[n] = True
            layers[lay[n]].append(n)
            stack.extend(reversed(succ[n]))
    for n in range(total):
        if not seen[n]:
            layers[lay[n]].append(n)
    pos = [0] * total
    for L in layers:
        for i, n in enumerate(L):
            pos[n] = i
    for it in range(sweeps):
        down = it % 2 == 0
        rng = range(1, nlay) if down else range(nlay - 2, -1, -1)
        nbrs = pred if down else succ
        for li in rng:
            L = layers[li]
            if len(L) < 2:
                continue
            keys = []
            for n in L:
                ns = nbrs[n]
                keys.append(sum([pos[m] for m in ns]) / len(ns) if ns else pos[n])
            L[:] = [L[i] for i in sorted(range(len(L)), key=keys.__getitem__)]
            for i, n in enumerate(L):
                pos[n] = i
    return Ordering(
        [[names[n] for n in L] for L in layers],
        [(names[u], names[v]) for u, v in proper],
        chains,
    )


def coordinates(
    ordering: Ordering, size: dict[str, tuple[float, float]], dummy_w: float = 8.0
) -> dict[str, tuple[float, float]]:
    """Top-left corner of every node (dummies included), from the cached ordering."""
    pred: dict[str, list[str]] = {}
    for u, v in ordering.edges:
        pred.setdefault(v, []).append(u)
    cx: dict[str, float] = {}
    y = 0.0
    out: dict[str, tuple[float, float]] = {}
    no_pred: list[str] = []
    for L in ordering.layers:
        w = [size.get(n, (dummy_w, 0.0))[0] for n in L]
        want = []
        x = 0.0
        for n, wn in zip(L, w):
            ps = [cx[p] for p in pred.get(n, no_pred) if p in cx]
            if ps:
                ps.sort()
                want.append(ps[len(ps) // 2])
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
    pos = {n: i for L in ordering.layers for i, n in enumerate(L)}
    lay = {n: li for li, L in enumerate(ordering.layers) for n in L}
    by_layer: dict[int, list[tuple[int, int]]] = {}
    for u, v in ordering.edges:
        if lay[v] == lay[u] + 1:
            by_layer.setdefault(lay[u], []).append((pos[u], pos[v]))
    total = 0
    for es in by_layer.values():
        es.sort()
        # count inversions of the target positions (merge-sort based)
        total += _inversions([b for _, b in es])
    return total


def _inversions(a: list[int]) -> int:
    if len(a) < 2:
        return 0
    mid = len(a) // 2
    left, right = a[:mid], a[mid:]
    n = _inversions(left) + _inversions(right)
    i = j = 0
    merged = []
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            n += len(left) - i
            j += 1
    merged += left[i:] + right[j:]
    a[:] = merged
    return n
