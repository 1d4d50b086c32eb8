"""The fast path and its slow twin: a ``loss()`` target's eager call copied op by op
(:mod:`tfviz.engine.eagerstream`) must give the analysis the trace alone gives, for every
bundled example and test script analyzed in that mode: the same verdicts, kinds, problems,
the ops they name and the user's lines. A copy that cannot reproduce a case must refuse it
(the trace then runs), never answer otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT
from tfviz.script.loader import read_source
from tfviz.script.scriptinfo import choose_mode

_FOLDERS = [EXAMPLES, ROOT / "tests" / "programs", ROOT / "tests" / "gui" / "scripts"]


def _loss_scripts() -> list[Path]:
    found = []
    for folder in _FOLDERS:
        for path in sorted(folder.rglob("*.py")):
            if path.name == "__init__.py":
                continue
            if choose_mode(read_source(str(path)), None, False) == "target":
                found.append(path)
    return found


SCRIPTS = _loss_scripts()


#: how a graph holds a value from outside it: the copy captures each as a placeholder, a
#: trace embeds a small eager constant as a Const (a frozen copy of a weight, say)
_CAPTURED = {"Const": "a captured value", "Placeholder": "a captured value"}


def _op_name(analysis, op: str, op_type: str) -> str:
    """What a problem's op is called: a custom gradient by its function (an ``Identity`` in
    the copy, the ``IdentityN`` of a trace, for the same user function), a value captured from
    outside as such, any other op by its type."""
    g = analysis.og.g if analysis.og is not None else None
    label = str(g.nodes[op].get("label", "")) if g is not None and op in g else ""
    if label.endswith("(custom gradient)"):
        return label
    return _CAPTURED.get(op_type, op_type)


def _summary(path: Path, copy: bool, monkeypatch) -> dict:
    from tfviz.analysis import diagnose
    from tfviz.errors import AnalysisError

    monkeypatch.setattr(diagnose, "COPY_EAGER_CALL", copy)
    try:
        done = diagnose.analysis(str(path))
    except AnalysisError as exc:
        return {"error": (exc.message, exc.line)}
    report = done.report
    return {
        "variables": sorted((v.name, v.status, v.kind) for v in report.variables),
        "problems": sorted(
            (
                p.kind,
                p.severity,
                _op_name(done, p.op, p.op_type),
                p.source.line if p.source is not None else None,
                tuple(sorted(p.variables)),
            )
            for p in report.problems
        ),
        "ok": report.ok,
    }


def test_the_scripts_cover_each_kind_of_loss():
    names = {p.name for p in SCRIPTS}
    # the bug reports whose answers the copy once changed are among them
    assert {"numpy_function_sliced.py", "custom_gradient_missing_variable.py"} <= names
    assert len(SCRIPTS) >= 40


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_copied_call_and_the_trace_agree(path, monkeypatch):
    traced = _summary(path, False, monkeypatch)
    copied = _summary(path, True, monkeypatch)
    assert copied == traced
