"""Layered (Sugiyama-style) layout in plain Python, fast enough for thousands of nodes.

Longest-path layering from the sources (inputs and variables at the top, the
target at the bottom), sources pulled down next to their first consumer, dummy
nodes on long edges, crossing reduction (below), then a two-sided compaction
for x.

Crossing reduction is in :mod:`app.graph.layout.crossings`. It starts from a
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

from bisect import bisect_left
from collections.abc import Collection
from dataclasses import dataclass, field

from . import crossings as _crossings

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
    _frame: tuple[frozenset[str] | None, _XFrame] | None = field(default=None, repr=False, compare=False)

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
    sweeps of :func:`app.graph.layout.crossings.reduce_crossings`).

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
    ordering: Ordering,
    size: dict[str, tuple[float, float]],
    dummy_w: float = 8.0,
    prefer: Collection[str] = (),
) -> dict[str, tuple[float, float]]:
    """Top-left corner of every node (dummies included), from the cached ordering.

    x by the priority layout method (:func:`_x_centres`); y puts each
    layer below the tallest node of the one above, each node centred in its layer's height.
    ``prefer`` (the nodes on the gradient path) come first: a preferred node is placed by
    its preferred neighbours when it has any, before the others, so the gradient chain,
    not the shape arithmetic beside it, is what stays straight.
    """
    if not ordering.layers:
        return {}
    xs = _x_centres(ordering, size, dummy_w, prefer)
    out: dict[str, tuple[float, float]] = {}
    y = 0.0
    for L in ordering.layers:
        hs = [size.get(n, (0.0, 0.0))[1] for n in L]
        h = max(hs, default=0.0)
        for n, hn in zip(L, hs):
            out[n] = (xs[n] - size.get(n, (dummy_w, 0.0))[0] / 2, y + (h - (hn if n in size else h)) / 2)
        y += h + V_GAP
    minx = min(x for x, _ in out.values())
    return {n: (x - minx, y0) for n, (x, y0) in out.items()}


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


# -- x placement: Sugiyama, Tagawa & Toda's priority layout method (1981) ---------------------
#
# One top-down pass that puts each node under the median of its inputs, then pushes
# overlapping nodes apart, lets a chain drift: every off-path op beside it (the shape
# arithmetic of a Reshape) pushes it sideways, and nothing pulls it back. In seed 1 the
# cut ended up 3,200 units to the side of the variable a few hops above it. That pass now
# only starts the placement; sweeps up and down then move each node to the median of its
# neighbours in the layer just placed, in order of priority: a node moves lower-priority
# nodes out of its way (never changing the order) and is never moved by them. Long edges
# and the gradient path come first, so they are what stays straight.

#: Sweeps after the first pass (True: down, each node placed by its inputs; False: up, by
#: its consumers). Two rounds: on seed 1 the first leaves the variable 3,100 units beside
#: the cut it feeds, the second 560, a third changes nothing.
SWEEPS = (False, True, False, True)
#: Graphs with more nodes than this (dummies included) keep the first pass only: a sweep
#: costs about as much as that pass (~10 ms per 5,000 nodes), and a flat layout of all of
#: ResNet50's 3,100 ops (5,300 nodes) has ~50 ms in all. A group the window lays out holds
#: a few hundred (seed 1's largest: 678).
SWEEP_MAX = 2000
_TOP = 1 << 20  # priority classes above any degree


@dataclass
class _XFrame:
    """What x placement needs of an ordering besides the sizes, built once per ordering
    (``coordinates`` runs on every expand and collapse, with new sizes only)."""

    ids: list[str]
    layers: list[list[int]]
    up: list[list[int]]  # the neighbours each node is placed by, sweeping down
    down: list[list[int]]  # and sweeping up
    prio_up: list[int]  # priorities sweeping down (placed by ``up``)
    prio_down: list[int]


def _x_frame(ordering: Ordering, prefer: Collection[str]) -> _XFrame:
    """The integer structure the x sweeps work on, cached on the ordering. Past
    :data:`SWEEP_MAX` nodes only the first pass runs, so only its inputs are built
    (priorities for ResNet50's 3,100 flat ops cost as much as the pass itself)."""
    ids = [n for L in ordering.layers for n in L]
    total = len(ids)
    key = frozenset(prefer) if total <= SWEEP_MAX else None
    if ordering._frame is not None and ordering._frame[0] == key:
        return ordering._frame[1]
    index = {n: i for i, n in enumerate(ids)}
    lay = [0] * total
    layers: list[list[int]] = []
    for li, L in enumerate(ordering.layers):
        row = [index[n] for n in L]
        for i in row:
            lay[i] = li
        layers.append(row)
    up: list[list[int]] = [[] for _ in range(total)]
    down: list[list[int]] = [[] for _ in range(total)]
    for u, v in ordering.edges:
        a, b = index.get(u), index.get(v)
        if a is not None and b is not None and lay[b] == lay[a] + 1:
            up[b].append(a)
            down[a].append(b)
    if key is None:  # the first pass alone: every input counts, no priorities
        frame = _XFrame(ids, layers, up, down, [], [])
        ordering._frame = (key, frame)
        return frame
    pref = [n in key for n in ids]
    for (u, v), chain in ordering.chains.items():  # a long edge between two path nodes
        if u in key and v in key:
            for d in chain:
                pref[index[d]] = True
    dummy = [n.startswith("\0") for n in ids]
    frame = _XFrame(ids, layers, [], [], [], [])
    for nbrs, used, prio in ((up, frame.up, frame.prio_up), (down, frame.down, frame.prio_down)):
        for x in range(total):
            heavy = [u for u in nbrs[x] if pref[u]] if pref[x] else []
            used.append(heavy or nbrs[x])
            # the gradient path's long edges, its ops, other long edges, then by degree
            cls = (4 if heavy else 2) if dummy[x] else (3 if heavy else 0)
            prio.append(cls * _TOP + len(nbrs[x]))
    ordering._frame = (key, frame)
    return frame


def _x_centres(
    ordering: Ordering, size: dict[str, tuple[float, float]], dummy_w: float, prefer: Collection[str]
) -> dict[str, float]:
    """Every node's x centre: the first pass, then the priority sweeps of :data:`SWEEPS`."""
    frame = _x_frame(ordering, prefer)
    width = [size.get(n, (dummy_w, 0.0))[0] for n in frame.ids]
    xs = [0.0] * len(width)
    seps = [[(width[a] + width[b]) / 2 + H_GAP for a, b in zip(L, L[1:])] for L in frame.layers]
    for L, sep in zip(frame.layers, seps):  # the first pass: under the inputs, pushed apart
        x, want = 0.0, []
        for v in L:
            ps = sorted([xs[u] for u in frame.up[v]])
            want.append(ps[len(ps) // 2] if ps else x + width[v] / 2)
            x += width[v] + H_GAP
        for v, c in zip(L, _spread(want, sep)):
            xs[v] = c
    for downward in SWEEPS if len(width) <= SWEEP_MAX else ():
        nbrs, prio = (frame.up, frame.prio_up) if downward else (frame.down, frame.prio_down)
        order = range(1, len(frame.layers)) if downward else range(len(frame.layers) - 2, -1, -1)
        for li in order:
            L = frame.layers[li]
            want = []
            for v in L:
                ps = sorted([xs[u] for u in nbrs[v]])
                k = len(ps)
                want.append(xs[v] if not k else ps[k // 2] if k % 2 else (ps[k // 2 - 1] + ps[k // 2]) / 2)
            for v, c in zip(L, _by_priority(want, [prio[v] for v in L], seps[li])):
                xs[v] = c
    return dict(zip(frame.ids, xs))


def _spread(want: list[float], sep: list[float]) -> list[float]:
    """``want`` with overlaps removed: pushed right, pushed left, the two averaged (so
    neither side alone moves), then right again for what averaging undid."""
    right, left = list(want), list(want)
    for i in range(1, len(want)):
        right[i] = max(right[i], right[i - 1] + sep[i - 1])
    for i in range(len(want) - 2, -1, -1):
        left[i] = min(left[i], left[i + 1] - sep[i])
    xs = [(a + b) / 2 for a, b in zip(right, left)]
    for i in range(1, len(xs)):
        xs[i] = max(xs[i], xs[i - 1] + sep[i - 1])
    return xs


def _by_priority(want: list[float], prio: list[int], sep: list[float]) -> list[float]:
    """One layer placed in order of priority: each node as near ``want`` as the nodes
    already placed allow, pushing the others (``want`` of those, for now) out of its way.
    ``sep[i]`` is the least distance between nodes ``i`` and ``i + 1``."""
    n = len(want)
    pre = [0.0]
    for s in sep:
        pre.append(pre[-1] + s)
    cur = _spread(want, sep)  # a feasible start, so pushing keeps it feasible
    placed: list[int] = []
    for i in sorted(range(n), key=lambda i: -prio[i]):
        d = want[i]
        k = bisect_left(placed, i)
        if k:
            j = placed[k - 1]
            d = max(d, cur[j] + pre[i] - pre[j])
        if k < len(placed):
            j = placed[k]
            d = min(d, cur[j] - pre[j] + pre[i])
        cur[i] = d
        for a in range(i + 1, n):
            m = cur[a - 1] + sep[a - 1]
            if cur[a] >= m:
                break
            cur[a] = m
        for a in range(i - 1, -1, -1):
            m = cur[a + 1] - sep[a]
            if cur[a] <= m:
                break
            cur[a] = m
        placed.insert(k, i)
    return cur
