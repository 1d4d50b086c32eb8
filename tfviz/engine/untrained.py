"""Marks in the graph document for the variables a step never trains.

These problems come after the graph is built, when the step's update is compared with what
the loss reads, so the graph's ops and edges are marked here, afterwards. No networkx: the
window applies it too, to an analysis saved by an earlier version.
"""

from __future__ import annotations

from tfviz.report import Report
from tfviz.vocabulary import Flow, Kind


def mark_not_trained(report: Report) -> None:
    """Give the read op of each ``not_trained`` variable (the problem's ``op``), and the
    variable's own node, the ``not_trained`` status, so the graph and its exports mark them.
    These problems come after the graph is built, when the step's update is compared with
    what the loss reads. Idempotent: the window applies it again to an analysis saved by an
    earlier version."""
    ops = {o.id: o for o in report.graph.ops}
    for p in report.problems:
        if p.kind != Kind.NOT_TRAINED:
            continue
        for oid in [p.op, *(f"var:{v}" for v in p.variables)]:
            op = ops.get(oid)
            if op is not None and op.status in (Flow.PASSES, Flow.OFF_PATH, Flow.STARVED):
                op.status, op.message = Kind.NOT_TRAINED, p.message
        for e in report.graph.edges:
            if e.dst == p.op and e.src in {f"var:{v}" for v in p.variables}:
                e.status = Kind.NOT_TRAINED
