"""Graphviz ``dot`` as the orderer of small groups, with a hard time budget.

``dot`` minimises crossings better than our barycenter sweeps, but it is an
external program whose run time grows fast with size. So it is used only for
groups of at most :data:`MAX_CHILDREN` children, with its effort limits set
(``nslimit``, ``mclimit``, ``searchsize``) and a subprocess timeout; when it is
missing, slow or fails, the caller keeps our own layered ordering. All groups of
one layout are sent to ``dot`` at once (one process each, run concurrently), so
the wait is that of the slowest group, not the sum.

Only the *ordering* is taken from ``dot`` (ranks, and the left-to-right order in
each rank, dummies for long edges included); coordinates are still ours, so a
cached ordering stays valid when a child group is expanded and grows.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Hashable
from typing import TypeVar

from .layered import Ordering

K = TypeVar("K", bound=Hashable)

MIN_CHILDREN = 3  # below this there is nothing to order
MAX_CHILDREN = 150
TIMEOUT_S = 0.8
#: At most this many ``dot`` runs per layout (largest groups first, where ordering matters
#: most): each costs a few ms of process start, and "Expand all" must stay responsive.
MAX_JOBS = 40
#: Effort limits: fewer network-simplex and mincross iterations, a smaller search.
EFFORT = ("-Gnslimit=2", "-Gnslimit1=2", "-Gmclimit=0.5", "-Gsearchsize=30", "-Gremincross=false")

Job = tuple[list[str], list[tuple[str, str]], dict[str, tuple[float, float]]]


def dot_program() -> str | None:
    """Path of ``dot``, or None (looked up each time so tests can hide it)."""
    return shutil.which("dot")


def to_dot(nodes: list[str], edges: list[tuple[str, str]], sizes: dict[str, tuple[float, float]]) -> str:
    """The group as a dot digraph; node names are ``n0, n1…`` so no quoting is needed."""
    idx = {n: i for i, n in enumerate(nodes)}
    out = ["digraph G {", "graph [nodesep=0.33, ranksep=0.6];", 'node [shape=box, fixedsize=true, label=""];']
    for n in nodes:
        w, h = sizes.get(n, (170.0, 38.0))
        out.append(f"n{idx[n]} [width={w / 72:.3f}, height={h / 72:.3f}];")
    seen = set()
    for u, v in edges:
        if u != v and u in idx and v in idx and (u, v) not in seen:
            seen.add((u, v))
            out.append(f"n{idx[u]} -> n{idx[v]};")
    out.append("}")
    return "\n".join(out)


def parse_plain(text: str, nodes: list[str], edges: list[tuple[str, str]]) -> Ordering:
    """Turn ``dot -Tplain`` output into an :class:`Ordering` (ranks top to bottom).

    A long edge gets one dummy per rank it crosses, placed where dot's spline
    crosses that rank, so the in-rank order of edges is dot's too.
    """
    pos: dict[str, tuple[float, float]] = {}
    splines: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for line in text.splitlines():
        p = line.split()
        if not p:
            continue
        if p[0] == "node":
            pos[p[1]] = (float(p[2]), float(p[3]))
        elif p[0] == "edge":
            n_pts = int(p[3])
            pts = [(float(p[4 + 2 * i]), float(p[5 + 2 * i])) for i in range(n_pts)]
            splines[(p[1], p[2])] = pts
    idx = {n: f"n{i}" for i, n in enumerate(nodes)}
    if any(idx[n] not in pos for n in nodes):
        raise ValueError("dot output lacks some nodes")
    ys = sorted({round(y, 2) for _, y in pos.values()}, reverse=True)  # dot's y grows upwards
    rank_of_y = {y: i for i, y in enumerate(ys)}
    rank = {n: rank_of_y[round(pos[idx[n]][1], 2)] for n in nodes}
    layers: list[list[tuple[float, str]]] = [[] for _ in ys]
    for n in nodes:
        layers[rank[n]].append((pos[idx[n]][0], n))
    proper: list[tuple[str, str]] = []
    chains: dict[tuple[str, str], list[str]] = {}
    k = 0
    for u, v in dict.fromkeys(edges):
        if u == v or rank[v] <= rank[u]:
            continue  # a back edge of a cycle: drawn, but not part of the layering
        if rank[v] == rank[u] + 1:
            proper.append((u, v))
            continue
        pts = splines.get((idx[u], idx[v])) or [pos[idx[u]], pos[idx[v]]]
        prev, chain = u, []
        for r in range(rank[u] + 1, rank[v]):
            d = f"\0d{k}"
            k += 1
            layers[r].append((_x_at(pts, ys[r]), d))
            chain.append(d)
            proper.append((prev, d))
            prev = d
        proper.append((prev, v))
        chains[(u, v)] = chain
    return Ordering([[n for _, n in sorted(L, key=lambda t: t[0])] for L in layers], proper, chains)


def _x_at(pts: list[tuple[float, float]], y: float) -> float:
    """Where the polyline through ``pts`` crosses height ``y`` (nearest point if it does not)."""
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if min(y0, y1) <= y <= max(y0, y1):
            return x0 if y0 == y1 else x0 + (x1 - x0) * (y - y0) / (y1 - y0)
    return min(pts, key=lambda p: abs(p[1] - y))[0]


def dot_orderings(
    jobs: dict[K, Job], timeout_s: float | None = None, effort: bool = True, program: str | None = None
) -> dict[K, Ordering]:
    """Order every job's graph with ``dot``; jobs that fail or time out are left out.

    All processes start together and share one deadline, ``timeout_s`` from now.
    """
    program = program or dot_program()
    if not program or not jobs:
        return {}
    args = [program, "-Tplain", *(EFFORT if effort else ())]
    procs = {}
    for key, (nodes, edges, sizes) in sorted(jobs.items(), key=lambda kv: -len(kv[1][0]))[:MAX_JOBS]:
        # input from a file, not a pipe: every process runs at once while we read the first
        with tempfile.TemporaryFile("w+") as src:
            src.write(to_dot(nodes, edges, sizes))
            src.seek(0)
            try:
                procs[key] = subprocess.Popen(
                    args, stdin=src, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
                )
            except OSError:
                break
    deadline = time.perf_counter() + (TIMEOUT_S if timeout_s is None else timeout_s)
    out: dict[K, Ordering] = {}
    for key, p in procs.items():
        try:
            text, _ = p.communicate(timeout=max(0.001, deadline - time.perf_counter()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            continue
        if p.returncode != 0:
            continue
        nodes, edges, _ = jobs[key]
        try:
            out[key] = parse_plain(text, nodes, edges)
        except (ValueError, IndexError, KeyError):
            continue
    return out
