"""Which ops lie on a variable's way to the target (pure graph walk, no Qt)."""

from __future__ import annotations

from tfviz.report import Report

TARGET = "__target__"


def path_ops(report: Report, var_id: str, passing_only: bool = True) -> set[str]:
    """Ops on some path from ``var_id`` to the target along edges the gradient passes.

    With ``passing_only`` a cut edge ends the walk, so a variable whose gradient
    is stopped gets no path at all (an empty set), which is what the view shows.
    """
    succ: dict[str, list[str]] = {}
    pred: dict[str, list[str]] = {}
    for e in report.graph.edges:
        if e.back or (passing_only and e.status != "passes"):
            continue
        succ.setdefault(e.src, []).append(e.dst)
        pred.setdefault(e.dst, []).append(e.src)
    fwd = _reach(var_id, succ)
    if TARGET not in fwd:
        return set()
    return fwd & _reach(TARGET, pred)


def _reach(start: str, adj: dict[str, list[str]]) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        for m in adj.get(stack.pop(), ()):
            if m not in seen:
                seen.add(m)
                stack.append(m)
    return seen
