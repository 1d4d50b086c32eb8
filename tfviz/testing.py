"""Gradient checks for a test suite: ``assert_gradients_flow`` fails a test, with the cause at
its line, when a variable would not train.

>>> import tfviz.testing
>>> def test_every_layer_trains():                              # doctest: +SKIP
...     tfviz.testing.assert_gradients_flow("train.py", allow=["teacher.kernel"])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from tfviz.api import Report, check
from tfviz.report import Source
from tfviz.vocabulary import Kind, Severity, Status

#: a connected variable with one of these kinds still does not train as it should
_BAD_KINDS = (Kind.NAN, Kind.ZERO)


def assert_gradients_flow(
    target: str | os.PathLike[str] | Callable[..., Any], *, allow: Iterable[str] = (), **options: Any
) -> Report:
    """Check ``target`` as :func:`tfviz.check` does (``options`` are its keywords) and raise
    AssertionError listing every variable that gets no usable gradient (its name, the kind
    of cut, and the file:line of the cause) and every other error the report holds.
    ``allow`` names variables known to be frozen (a teacher, a target network): they may be
    cut. A name in ``allow`` that the report does not have is an error too, so that a
    renamed variable is noticed. Returns the report when all is well."""
    report = check(target, **options)
    allowed = set(allow)
    names = {v.name for v in report.variables}
    unknown = sorted(allowed - names)
    lines = [f"allow names {', '.join(unknown)}, which the report does not have"] if unknown else []
    blamed: set[str] = set()
    for v in report.variables:
        if v.name in allowed or (v.status == Status.CONNECTED and v.kind not in _BAD_KINDS):
            continue
        cause = next((p for p in report.problems if v.name in p.variables), None)
        kind = v.kind or (cause.kind if cause else v.status)
        where = _where(cause.source if cause and cause.source else v.source)
        lines.append(f"{v.name}: {kind}{where}" + (f": {cause.message}" if cause else ""))
        blamed.add(v.name)
    for p in report.problems:
        if p.severity == Severity.ERROR and not (set(p.variables) & (blamed | allowed)):
            lines.append(f"{p.kind}{_where(p.source)}: {p.message}")
    if lines:
        head = f"gradients do not flow in {os.path.basename(report.script)} ({report.target}):"
        raise AssertionError("\n".join([head, *(f"  {ln}" for ln in lines)]))
    return report


def _where(source: Source | None) -> str:
    return f" at {source.label()}" if source is not None else ""
