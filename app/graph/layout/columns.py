"""Wrapping a tall layered layout into side-by-side columns, as a newspaper sets a long text.

A long model laid out top to bottom is a strip: ResNet50 at layer level is 17,000 units
tall and 1,500 wide, a Sequential of 31 ``Dense`` layers 3,300 by 230, and a window shows seven
of its boxes in a quarter of its width. Once a group's layout is far taller than
:data:`ASPECT`, its layers are cut into columns placed left to right, each read top to
bottom, so the same graph fills a landscape window at a readable zoom.

A column may only end where the graph narrows to one edge between two boxes, collapsed
groups (a ResNet block's ``add`` into its ``out``, one ``Dense`` into the next): no long
edge, no second input crosses from one column to the next. That one edge is a
:class:`Jump`, drawn from the bottom of its column, up the gutter between the two columns,
into the top of the next. Columns are an overview of a model's layers; an open group is
never at a column's end (the jump would run through its title and ops to the op inside),
and a chain of single ops or of open groups (Expand all) is read op by op, scrolling down.
Columns are filled in order, balanced so the tallest is as short as the cuts allow; how
many is chosen for the whole to come nearest :data:`ASPECT`. It is a fixed shape, not the
viewport's: the window, ``tfviz export`` and the Export image dialog draw one layout.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from .layered import Ordering

#: the shape (width / height) a wrapped group aims at: the graph pane of the default window
ASPECT = 1.6
#: a group shorter than this (in scene units) stays one column: it fits a window at a
#: readable zoom (0.75, 600 pixels of height), and a short chain reads best straight down
MIN_HEIGHT = 1000.0
#: wrapped only when more than this many times taller than :data:`ASPECT` asks for
TALLER = 2.0
#: the gutter between two columns, wide enough that columns read as columns and a jump's
#: climb has room in the middle
COL_GAP = 80.0
#: room above and below the columns for a jump's runs
JUMP = 32.0
#: a last column shorter than this share of the others joins the one before it
WIDOW = 0.25
#: the most columns tried (a graph needing more is far wider than any window anyway)
MAX_COLUMNS = 64


@dataclass(frozen=True)
class Jump:
    """The edge from the last layer of one column into the first of the next (``src`` and
    ``dst``, children of the group), routed in the group's coordinates: down to ``low``
    below its column, across to the gutter at ``lane``, up to ``high`` above the next
    column, across and down into ``dst``."""

    src: str
    dst: str
    lane: float
    low: float
    high: float


@dataclass
class _Block:
    """Layers ``first..last`` that must stay in one column, and their extent."""

    first: int
    last: int
    top: float
    bottom: float
    left: float
    right: float


def wrap(
    ordering: Ordering,
    coords: dict[str, tuple[float, float]],
    size: Mapping[str, tuple[float, float]],
    boxes: Collection[str],
    dummy_w: float = 8.0,
) -> tuple[dict[str, tuple[float, float]], list[Jump]]:
    """``coords`` (top-left corners from :func:`app.graph.layout.layered.coordinates`) cut
    into columns when the layout is tall and narrow (see the module), with the jumps between
    them; unchanged, with no jumps, otherwise. ``boxes``: the nodes that are collapsed groups."""
    layers = ordering.layers
    if len(layers) < 4 or not coords:
        return coords, []
    height = max(coords[n][1] + size.get(n, (dummy_w, 0.0))[1] for n in layers[-1]) - min(
        coords[n][1] for n in layers[0]
    )
    if height < MIN_HEIGHT:  # most groups: checked before anything is built
        return coords, []
    width = max(x + size.get(n, (dummy_w, 0.0))[0] for n, (x, _) in coords.items()) - min(
        x for x, _ in coords.values()
    )
    if width / height >= ASPECT / TALLER:
        return coords, []
    where = {n: li for li, L in enumerate(layers) for n in L}
    blocks = _blocks(ordering, where, coords, size, boxes, dummy_w)
    if len(blocks) < 2:
        return coords, []
    columns = _best_columns(blocks)
    if len(columns) < 2:
        return coords, []
    spans = [
        (
            min(blk.left for blk in blocks[a : b + 1]),
            max(blk.right for blk in blocks[a : b + 1]),
            blocks[a].top,
            blocks[b].bottom,
        )
        for a, b in columns
    ]
    tallest = max(bottom - top for _, _, top, bottom in spans)
    # the last column ends level with the tallest, so the group is left at its bottom edge
    # (an edge out of it does not cross the columns before it)
    starts = [JUMP] * (len(spans) - 1) + [JUMP + tallest - (spans[-1][3] - spans[-1][2])]
    out: dict[str, tuple[float, float]] = {}
    jumps: list[Jump] = []
    x0 = 0.0
    for k, ((a, b), (left, right, top, bottom)) in enumerate(zip(columns, spans)):
        for li in range(blocks[a].first, blocks[b].last + 1):
            for n in layers[li]:
                x, y = coords[n]
                out[n] = (x - left + x0, y - top + starts[k])
        edge = _only_edge(ordering, where, blocks[b].last) if k + 1 < len(columns) else None
        if edge is not None:
            jumps.append(
                Jump(
                    edge[0],
                    edge[1],
                    x0 + right - left + COL_GAP / 2,
                    starts[k] + bottom - top + JUMP / 2,
                    starts[k + 1] - JUMP / 2,
                )
            )
        x0 += right - left + COL_GAP
    return out, jumps


def _blocks(
    ordering: Ordering,
    where: dict[str, int],
    coords: dict[str, tuple[float, float]],
    size: Mapping[str, tuple[float, float]],
    boxes: Collection[str],
    dummy_w: float,
) -> list[_Block]:
    """The layers grouped into blocks no column may split: a column may end after layer
    ``i`` only when at most one edge leaves the layers down to ``i``, and that edge joins
    two ``boxes`` in layers ``i`` and ``i + 1``."""
    layers = ordering.layers
    crossing = [0] * (len(layers) + 1)
    for u, v in ordering.edges:
        lu, lv = where.get(u), where.get(v)
        if lu is None or lv is None or lv <= lu:
            continue
        crossing[lu] += 1
        crossing[lv] -= 1
        if lv > lu + 1 or u not in boxes or v not in boxes:
            crossing[lu] += 2  # a long edge, part of one (a dummy), or an op's: never cut
            crossing[lv] -= 2
    blocks: list[_Block] = []
    open_at, running = 0, 0
    for li in range(len(layers)):
        running += crossing[li]
        if li + 1 < len(layers) and running > 1:
            continue
        rows = [n for lj in range(open_at, li + 1) for n in layers[lj]]
        tops = [coords[n][1] for n in rows]
        blocks.append(
            _Block(
                open_at,
                li,
                min(tops),
                max(coords[n][1] + size.get(n, (dummy_w, 0.0))[1] for n in rows),
                min(coords[n][0] for n in rows),
                max(coords[n][0] + size.get(n, (dummy_w, 0.0))[0] for n in rows),
            )
        )
        open_at = li + 1
    return blocks


def _only_edge(ordering: Ordering, where: dict[str, int], li: int) -> tuple[str, str] | None:
    """The edge from layer ``li`` into layer ``li + 1``, if there is one (a column's end)."""
    for u, v in ordering.edges:
        if where.get(u) == li and where.get(v) == li + 1:
            return u, v
    return None


def _best_columns(blocks: list[_Block]) -> list[tuple[int, int]]:
    """The columns (first and last block of each) whose whole comes nearest :data:`ASPECT`,
    trying every count from one up: fewer columns on a tie."""
    best: list[tuple[int, int]] = [(0, len(blocks) - 1)]
    best_off = math.inf
    tried: set[tuple[tuple[int, int], ...]] = set()
    for c in range(1, min(len(blocks), MAX_COLUMNS) + 1):
        cols = _balanced(blocks, c)
        if tuple(cols) in tried:  # no balance with ``c`` columns beats one with fewer
            continue
        tried.add(tuple(cols))
        w = sum(
            max(b.right for b in blocks[a : z + 1]) - min(b.left for b in blocks[a : z + 1]) for a, z in cols
        ) + COL_GAP * (len(cols) - 1)
        h = max(blocks[z].bottom - blocks[a].top for a, z in cols) + 2 * JUMP
        off = abs(math.log(max(w, 1.0) / max(h, 1.0) / ASPECT))
        if off < best_off - 1e-9:
            best, best_off = cols, off
        elif w / h > ASPECT:  # wider than wanted, and more columns only widen it
            break
    return best


def _balanced(blocks: list[_Block], count: int) -> list[tuple[int, int]]:
    """At most ``count`` columns of consecutive blocks, the tallest as short as can be: the
    least height limit that greedy filling meets with ``count`` columns (bisection). A last
    column under :data:`WIDOW` of that limit joins the one before, as a typesetter keeps a
    paragraph's last line off a page of its own."""
    lo = max(b.bottom - b.top for b in blocks)
    hi = blocks[-1].bottom - blocks[0].top
    if count <= 1:
        return _fill(blocks, hi)
    for _ in range(40):
        if hi - lo < 1.0:
            break
        mid = (lo + hi) / 2
        if len(_fill(blocks, mid)) <= count:
            hi = mid
        else:
            lo = mid
    cols = _fill(blocks, hi)
    if len(cols) > 1:
        (a, _), (b, z) = cols[-2:]
        if blocks[z].bottom - blocks[b].top < WIDOW * hi:
            cols[-2:] = [(a, z)]
    return cols


def _fill(blocks: list[_Block], limit: float) -> list[tuple[int, int]]:
    """Blocks in order into columns, a new column whenever the next block would take the
    current one past ``limit`` (a block taller than it gets a column of its own)."""
    cols: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(blocks)):
        if blocks[i].bottom - blocks[start].top > limit:
            cols.append((start, i - 1))
            start = i
    cols.append((start, len(blocks) - 1))
    return cols
