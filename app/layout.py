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


def _layering(nodes: list[str], edges: list[tuple[str, str]]) -> tuple[dict[str, int], list]:
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    indeg = dict.fromkeys(nodes, 0)
    seen = set()
    for u, v in edges:
        if u == v or (u, v) in seen or u not in succ or v not in succ:
            continue
        seen.add((u, v))
        succ[u].append(v)
        indeg[v] += 1
    # Kahn's algorithm; on a cycle, drop the in-edges of the node with the fewest.
    layer = dict.fromkeys(nodes, 0)
    ready = [n for n in nodes if indeg[n] == 0]
    done: set[str] = set()
    topo: list[str] = []
    kept: list[tuple[str, str]] = []
    remaining = set(nodes)
    while remaining:
        while ready:
            u = ready.pop()
            if u in done:
                continue
            done.add(u)
            topo.append(u)
            remaining.discard(u)
            for v in succ[u]:
                if v in done:
                    continue
                kept.append((u, v))
                if layer[u] + 1 > layer[v]:
                    layer[v] = layer[u] + 1
                indeg[v] -= 1
                if indeg[v] == 0:
                    ready.append(v)
        if remaining:
            ready.append(min(remaining, key=lambda n: (indeg[n], n)))
    # Pull every node down next to its earliest consumer (as late as possible):
    # side chains such as variable reads then sit beside the op that uses them
    # instead of at the top with edges hundreds of layers long.
    ksucc: dict[str, list[str]] = {}
    for u, v in kept:
        ksucc.setdefault(u, []).append(v)
    for n in reversed(topo):
        vs = ksucc.get(n)
        if vs:
            layer[n] = max(layer[n], min(layer[v] for v in vs) - 1)
    return layer, kept


def order(nodes: list[str], edges: list[tuple[str, str]], sweeps: int = 4) -> Ordering:
    """Layer ``nodes`` and order each layer to reduce edge crossings."""
    if not nodes:
        return Ordering([], [])
    layer, kept = _layering(nodes, edges)
    proper: list[tuple[str, str]] = []
    chains: dict[tuple[str, str], list[str]] = {}
    lay = dict(layer)
    k = 0
    for u, v in kept:
        lu, lv = lay[u], lay[v]
        if lv - lu <= 1:
            proper.append((u, v))
            continue
        prev, chain = u, []
        for li in range(lu + 1, lv):
            d = f"\0d{k}"
            k += 1
            lay[d] = li
            chain.append(d)
            proper.append((prev, d))
            prev = d
        proper.append((prev, v))
        chains[(u, v)] = chain
    nlay = max(lay.values()) + 1
    layers: list[list[str]] = [[] for _ in range(nlay)]
    # Initial order: DFS from sources keeps chains together.
    succ: dict[str, list[str]] = {}
    pred: dict[str, list[str]] = {}
    for u, v in proper:
        succ.setdefault(u, []).append(v)
        pred.setdefault(v, []).append(u)
    seen: set[str] = set()
    for root in nodes:
        if root in seen or pred.get(root):
            continue
        stack = [root]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            layers[lay[n]].append(n)
            stack.extend(reversed(succ.get(n, ())))
    for n in lay:
        if n not in seen:
            seen.add(n)
            layers[lay[n]].append(n)
    pos = {n: i for L in layers for i, n in enumerate(L)}
    for it in range(sweeps):
        down = it % 2 == 0
        rng = range(1, nlay) if down else range(nlay - 2, -1, -1)
        nbrs = pred if down else succ
        for li in rng:
            L = layers[li]
            keys = {}
            for n in L:
                ns = nbrs.get(n)
                keys[n] = sum(pos[m] for m in ns) / len(ns) if ns else pos[n]
            L.sort(key=keys.__getitem__)
            for i, n in enumerate(L):
                pos[n] = i
    return Ordering(layers, proper, chains)


def coordinates(
    ordering: Ordering, size: dict[str, tuple[float, float]], dummy_w: float = 8.0
) -> dict[str, tuple[float, float]]:
    """Top-left corner of every node (dummies included), from the cached ordering."""
    pred: dict[str, list[str]] = {}
    for u, v in ordering.edges:
        pred.setdefault(v, []).append(u)
    w = {n: size.get(n, (dummy_w, 0.0))[0] for L in ordering.layers for n in L}
    cx: dict[str, float] = {}
    y = 0.0
    out: dict[str, tuple[float, float]] = {}
    for L in ordering.layers:
        want = []
        x = 0.0
        for n in L:
            ps = [cx[p] for p in pred.get(n, ()) if p in cx]
            want.append(sorted(ps)[len(ps) // 2] if ps else x + w[n] / 2)
            x += w[n] + H_GAP
        # push right so nodes do not overlap, then push left, and average the two
        right, left = list(want), list(want)
        for i in range(1, len(L)):
            right[i] = max(right[i], right[i - 1] + (w[L[i - 1]] + w[L[i]]) / 2 + H_GAP)
        for i in range(len(L) - 2, -1, -1):
            left[i] = min(left[i], left[i + 1] - (w[L[i + 1]] + w[L[i]]) / 2 - H_GAP)
        xs = [(a + b) / 2 for a, b in zip(right, left)]
        for i in range(1, len(L)):  # averaging can reintroduce overlap; fix it
            xs[i] = max(xs[i], xs[i - 1] + (w[L[i - 1]] + w[L[i]]) / 2 + H_GAP)
        h = max((size.get(n, (0, 0))[1] for n in L), default=0.0)
        for n, c in zip(L, xs):
            cx[n] = c
            out[n] = (c - w[n] / 2, y + (h - size.get(n, (0, h))[1]) / 2)
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
