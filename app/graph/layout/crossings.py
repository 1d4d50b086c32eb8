"""Edge crossings of a layered drawing: the measure of layout quality.

A layered drawing puts every node on a horizontal layer and every edge between
two adjacent layers (a long edge is a chain of dummy nodes, one per layer it
passes, and each of its segments counts like an edge). Two such edges cross
exactly when their order at the top layer is the opposite of their order at the
bottom layer, so the crossings between two layers are the inversions of the
lower positions once the edges are sorted by their upper positions. Edges that
share an endpoint never cross.

The same count serves three callers: the layout (:mod:`app.graph.layout.layered`) keeps
the best ordering it has seen and refines only the layers that still have
crossings, the tests check it on graphs with a known crossing number, and the
benchmark compares our orderings with ``dot``'s.

:func:`reduce_crossings` orders the layers as Gansner et al.'s ``dot`` does (barycenter
sweeps, then ``transpose``: adjacent swaps while they remove crossings; the best
ordering seen is kept), plus one move ``dot`` lacks, which makes gradient views
come out with no crossings, as ``dot`` draws them, in a fraction of its time: a
*side chain* (a variable's read chain ``var -> resource -> ReadVariableOp ->
Reshape``, or a long edge from a source) slides sideways as a whole. Moving it
one layer at a time first adds a crossing, so neither sweeps nor transpose get
it out of the wrong side of the main path.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Hashable, Sequence
from typing import Protocol, TypeVar

N = TypeVar("N", bound=Hashable)
_K = TypeVar("_K", contravariant=True)
_V = TypeVar("_V", covariant=True)


class Lookup(Protocol[_K, _V]):
    """What ``x[key]`` reads: a dict, or a list indexed by integer ids."""

    def __getitem__(self, key: _K, /) -> _V: ...


#: Side chains longer than this are not moved, nor further than this many places: a
#: variable's read chain has at most ~5 nodes, and one place past the main path is what
#: fixes ResNet50's; longer chains and further moves cost time for nothing we measured.
MAX_CHAIN = 8
MAX_SHIFT = 4


def inversions(seq: Sequence[int]) -> int:
    """Pairs ``i < j`` with ``seq[i] > seq[j]`` (equal values are no inversion).

    >>> inversions([0, 1, 1, 2]), inversions([2, 1, 0]), inversions([1, 0, 1, 0])
    (0, 3, 3)
    """
    if len(seq) < 2 or seq == sorted(seq):
        return 0  # the common case: a layer pair without crossings (timsort checks it in C)
    seen: list[int] = []
    n = 0
    for x in seq:  # earlier values greater than x; insort is a C memmove, fast for layer sizes
        n += len(seen) - bisect_right(seen, x)
        insort(seen, x)
    return n


def pair_crossings(upper: Sequence[N], succ: Lookup[N, Sequence[N]], pos: Lookup[N, int]) -> int:
    """Crossings among the edges from the nodes of ``upper`` (in their order) to the next layer.

    ``succ[u]`` are ``u``'s neighbours in the next layer and ``pos[v]`` their positions
    there; both may be lists indexed by integer ids or dicts.

    >>> pair_crossings(["a", "b"], {"a": ["d"], "b": ["c"]}, {"c": 0, "d": 1})
    1
    """
    seq: list[int] = []
    for u in upper:
        ns = succ[u]
        if len(ns) == 1:
            seq.append(pos[ns[0]])
        elif ns:
            seq.extend(sorted([pos[v] for v in ns]))
    return inversions(seq)


def crossed_edges(upper: Sequence[N], succ: Lookup[N, Sequence[N]], pos: Lookup[N, int]) -> list[tuple[N, N]]:
    """The edges from ``upper`` to the next layer that cross at least one other edge there.

    An edge is crossed when an edge before it (in upper order) ends further right, or
    one after it ends further left: a prefix maximum and a suffix minimum, so it costs
    no more than counting.

    >>> crossed_edges(["a", "b", "c"], {"a": ["x"], "b": ["z"], "c": ["y"]}, {"x": 0, "y": 1, "z": 2})
    [('b', 'z'), ('c', 'y')]
    """
    es: list[tuple[N, N]] = []
    for u in upper:
        es.extend((u, v) for v in sorted(succ[u], key=pos.__getitem__))
    lows = [pos[v] for _, v in es]
    out = []
    hi_before = -1
    lo_after = [0] * len(lows)
    m = len(lows) + 1 + max(lows, default=0)
    for i in range(len(lows) - 1, -1, -1):
        lo_after[i] = m
        m = min(m, lows[i])
    for i, (e, p) in enumerate(zip(es, lows)):
        if hi_before > p or lo_after[i] < p:
            # strictly: shared lower ends (equal positions) never cross
            out.append(e)
        hi_before = max(hi_before, p)
    return out


def per_layer(layers: Sequence[Sequence[N]], edges: Sequence[tuple[N, N]]) -> list[int]:
    """Crossings between layer ``i`` and ``i + 1``, for each ``i``.

    Only edges between adjacent layers are counted (the edges of a proper layered
    graph, dummies included); an edge that skips a layer has no place in the
    drawing's layer order and is ignored, as is a node in no layer.
    """
    layer_of: dict[N, int] = {}
    pos: dict[N, int] = {}
    for li, layer in enumerate(layers):
        for i, n in enumerate(layer):
            layer_of[n] = li
            pos[n] = i
    succ: dict[N, list[N]] = {n: [] for n in pos}
    for u, v in dict.fromkeys(edges):
        lu = layer_of.get(u)
        if lu is not None and layer_of.get(v) == lu + 1:
            succ[u].append(v)
    return [pair_crossings(layers[i], succ, pos) for i in range(len(layers) - 1)]


def count(layers: Sequence[Sequence[N]], edges: Sequence[tuple[N, N]]) -> int:
    """All crossings of the layered drawing ``layers`` (left to right per layer) of ``edges``.

    >>> count([["a", "b"], ["c", "d"]], [("a", "d"), ("b", "c")])  # an X
    1
    >>> count([["a", "b", "c"], ["x", "y", "z"]], [("a", "z"), ("b", "y"), ("c", "x")])
    3
    >>> count([["a", "b"], ["c", "d"]], [("a", "c"), ("b", "d"), ("a", "d")])  # shared ends
    0
    """
    return sum(per_layer(layers, edges))


def _positions(layers: list[list[int]], pos: list[int]) -> None:
    for L in layers:
        for i, n in enumerate(L):
            pos[n] = i


def _per_pair(layers: list[list[int]], succ: list[list[int]], pos: list[int]) -> list[int]:
    return [pair_crossings(layers[i], succ, pos) for i in range(len(layers) - 1)]


def _hot(per: list[int]) -> set[int]:
    """The layers next to a crossing: elsewhere no swap can remove one."""
    return {j for i, c in enumerate(per) if c for j in (i, i + 1)}


def reduce_crossings(
    layers: list[list[int]], pred: list[list[int]], succ: list[list[int]], lay: list[int], sweeps: int
) -> int:
    """Order ``layers`` (lists of node ids ``0..len(lay)-1``; ``lay[n]`` is ``n``'s layer,
    ``pred``/``succ`` its neighbours in the layers above and below) in place, to few
    crossings; returns how many are left.

    Transpose the initial order, then ``sweeps`` barycenter sweeps, alternately down and
    up, with transpose after each up sweep (after the down sweep as well, it removed
    nothing more on ResNet50's and MobileNetV2's graphs, and took time); the best
    ordering seen is kept, since a sweep can undo a good start. Side chains are moved last, where
    crossings are left. Crossings are recounted only next to the layers that changed:
    most of a long model's layers settle at once.
    """
    pos = [0] * len(lay)
    _positions(layers, pos)
    per = _per_pair(layers, succ, pos)

    def recount(changed: set[int]) -> None:
        for i in {j for li in changed for j in (li - 1, li) if 0 <= j < len(per)}:
            per[i] = pair_crossings(layers[i], succ, pos)

    recount(_transpose(layers, pred, succ, pos, lay, _hot(per)))
    best_cross = sum(per)
    saved, saved_per = [list(L) for L in layers], list(per)
    for it in range(sweeps):
        if best_cross == 0:
            break
        down = it % 2 == 0
        recount(_sweep(layers, pred if down else succ, pos, down))
        if down and it < sweeps - 1:
            continue
        recount(_transpose(layers, pred, succ, pos, lay, _hot(per)))
        if sum(per) < best_cross:
            best_cross, saved, saved_per = sum(per), [list(L) for L in layers], list(per)
    layers[:] = saved
    if best_cross:
        _positions(layers, pos)
        best_cross -= _move_side_chains(layers, pred, succ, pos, lay, saved_per)
    return best_cross


def _sweep(layers: list[list[int]], nbrs: list[list[int]], pos: list[int], down: bool) -> set[int]:
    """One barycenter pass: each layer sorted by the mean position of its neighbours in the
    layer before it (``down``) or after it; a node without such neighbours keeps its place.
    Returns the layers whose order changed."""
    nlay = len(layers)
    changed = set()
    for li in range(1, nlay) if down else range(nlay - 2, -1, -1):
        L = layers[li]
        if len(L) < 2:
            continue
        keys: list[float] = []
        for n in L:
            ns = nbrs[n]
            if len(ns) == 1:
                keys.append(pos[ns[0]])
            else:
                keys.append(sum([pos[m] for m in ns]) / len(ns) if ns else pos[n])
        if keys == sorted(keys):
            continue
        changed.add(li)
        L[:] = [L[i] for i in sorted(range(len(L)), key=keys.__getitem__)]
        for i, n in enumerate(L):
            pos[n] = i
    return changed


def _cross(a: list[int], b: list[int], pos: list[int]) -> int:
    """Crossings between the edges to ``a`` and those to ``b``, for ``a``'s node on the left."""
    c = 0
    for x in a:
        px = pos[x]
        for y in b:
            if pos[y] < px:
                c += 1
    return c


def _gain(a: list[int], b: list[int], pos: list[int]) -> int:
    """Crossings removed on one side by swapping the nodes whose edges go to ``a`` and ``b``."""
    if len(a) == 1 and len(b) == 1:  # most nodes: one edge each way
        d = pos[a[0]] - pos[b[0]]
        return (d > 0) - (d < 0)
    if a and b:
        return _cross(a, b, pos) - _cross(b, a, pos)
    return 0


def _transpose(
    layers: list[list[int]],
    pred: list[list[int]],
    succ: list[list[int]],
    pos: list[int],
    lay: list[int],
    todo: set[int],
) -> set[int]:
    """Swap adjacent nodes while that removes crossings, on both sides of the layer
    (Gansner et al.'s ``transpose``), starting with the nodes of the layers ``todo``.

    A worklist of pairs rather than of layers: a swap changes the gain of only the pairs
    next to it and of those holding the two nodes' neighbours, so only those are looked
    at again, not their whole layers. Every swap removes a crossing, so it ends. Returns
    the layers whose order changed."""
    work = [n for li in sorted(todo, reverse=True) for n in reversed(layers[li][:-1])]
    queued = set(work)  # a node stands for the pair it makes with its right neighbour
    changed = set()
    while work:
        u = work.pop()
        queued.discard(u)
        L = layers[lay[u]]
        i = pos[u]
        if i + 1 >= len(L):
            continue
        v = L[i + 1]
        if _gain(pred[u], pred[v], pos) + _gain(succ[u], succ[v], pos) <= 0:
            continue
        L[i], L[i + 1] = v, u
        pos[u], pos[v] = i + 1, i
        changed.add(lay[u])
        again = [v, u, *pred[u], *pred[v], *succ[u], *succ[v]]
        for m in again:
            for left in (m, layers[lay[m]][pos[m] - 1] if pos[m] else m):
                if left not in queued:
                    queued.add(left)
                    work.append(left)
    return changed


def side_chains(nodes: set[int], pred: list[list[int]], succ: list[list[int]]) -> list[list[int]]:
    """The side chains through ``nodes``: paths that start at a source (or end at a sink) and
    pass only nodes with one edge in and one out, such as a variable's read chain or a long
    edge's dummies. Each is listed from its source (or sink) toward the node it joins the
    rest of the graph at, which is not part of it.

    >>> pred, succ = [[], [0], [1, 3], []], [[1], [2], [], [2]]  # 0 -> 1 -> 2 <- 3
    >>> side_chains({1}, pred, succ)
    [[0, 1]]
    """
    out: dict[int, list[int]] = {}
    for x in nodes:
        for up, down in ((pred, succ), (succ, pred)):
            if len(down[x]) != 1:
                continue
            s = x
            while len(up[s]) == 1 and len(down[up[s][0]]) == 1:
                s = up[s][0]
            if up[s] or s in out:
                continue
            chain, n = [s], down[s][0]
            while len(up[n]) == 1 and len(down[n]) == 1:
                chain.append(n)
                n = down[n][0]
            out[s] = chain
    return list(out.values())


def _slide(
    chain: list[int],
    layers: list[list[int]],
    lay: list[int],
    pred: list[list[int]],
    succ: list[list[int]],
    pos: list[int],
    step: int,
) -> int:
    """Swap every node of ``chain`` with its neighbour on the right (``step`` 1) or left (-1),
    where it has one; returns the crossings that removed (negative: added). Each swap's gain
    is exact given the chain's nodes already moved, so the sum is the whole move's."""
    removed = 0
    for n in chain:
        L = layers[lay[n]]
        i = pos[n]
        j = i + step
        if not 0 <= j < len(L):
            continue
        m = L[j]
        u, v = (n, m) if step > 0 else (m, n)
        removed += _gain(pred[u], pred[v], pos) + _gain(succ[u], succ[v], pos)
        L[i], L[j] = m, n
        pos[n], pos[m] = j, i
    return removed


def _move_side_chains(
    layers: list[list[int]],
    pred: list[list[int]],
    succ: list[list[int]],
    pos: list[int],
    lay: list[int],
    per: list[int],
) -> int:
    """Slide each side chain with a crossed edge sideways, the same number of places in all
    its layers (up to :data:`MAX_SHIFT`), to where the fewest crossings are; returns the
    crossings removed."""
    crossed = {n for i in range(len(per)) if per[i] for e in crossed_edges(layers[i], succ, pos) for n in e}
    removed = 0
    for chain in side_chains(crossed, pred, succ):
        if len(chain) > MAX_CHAIN:
            continue
        saved = {lay[n]: list(layers[lay[n]]) for n in chain}
        best, best_move = 0, (0, 0)
        for step in (1, -1):
            gained = 0
            for k in range(1, MAX_SHIFT + 1):
                gained += _slide(chain, layers, lay, pred, succ, pos, step)
                if gained > best:
                    best, best_move = gained, (step, k)
            for li, L in saved.items():  # back where it was
                layers[li][:] = L
                for i, m in enumerate(L):
                    pos[m] = i
        step, k = best_move
        for _ in range(k):
            _slide(chain, layers, lay, pred, succ, pos, step)
        removed += best
    return removed
