"""A script's ``loss()`` checked in the caller's process, as a notebook checks it: its objects
made before the check (an earlier cell built the model and called it), so nothing records how
they were made. It must give the answer tfviz gives when it runs the whole script and records
every tensor's making: the same verdicts, kinds, problems and lines. Its copies of a variable
made before the check are found by their values, or by the line that made them reading the
variable (:mod:`tfviz.analysis.earliercopies`), where the script's run finds them by their
recorded lineage.

The one difference allowed, and asserted: a problem the script's run places where a Keras
layer's variable was made (by Keras' own code, called from the user's line) is placed where the
user's code assigned the nearest object that holds the variable (``stack = [Dense(...)...]``
for ``stack[0].bias``, built a line later by ``model = keras.Sequential([..., *stack])``), for
no assignment of the user's holds that variable itself."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_copy_vs_trace import SCRIPTS


def _summary(report) -> dict:
    return {
        "variables": sorted((v.name, v.status, v.kind) for v in report.variables),
        "problems": sorted(
            (p.kind, p.severity, p.op_type, p.source.line if p.source else None, tuple(sorted(p.variables)))
            for p in report.problems
        ),
        "ok": report.ok,
    }


def _in_process(path: Path):
    """The script's objects made by running it (not as ``__main__``), its loss called once, as
    a notebook's cells would, then checked."""
    from tfviz.analysis.diagnose import analysis_of_function

    names = runpy.run_path(str(path), run_name="checked_in_process")
    loss = names["loss"]
    loss()
    return analysis_of_function(loss), names


def _holder_lines(path: Path, variable: str) -> set[int]:
    """The lines of ``path`` that assign an object holding ``variable`` (a path of the walk,
    ``stack[0].bias``): ``stack = ...`` at the top, or ``self.<name> = ...`` for a holder
    held at an attribute ``<name>``. Read off the script's text, not by tfviz."""
    import ast
    import re

    holders = [variable[: m.start()] for m in re.finditer(r"[.\[]", variable) if m.start()]
    roots = {h for h in holders if re.fullmatch(r"[A-Za-z_]\w*", h)}
    attributes = {h.rsplit(".", 1)[1] for h in holders if re.search(r"\.[A-Za-z_]\w*$", h)}
    lines = set()
    for node in ast.walk(ast.parse(path.read_text())):
        for target in getattr(node, "targets", []) if isinstance(node, ast.Assign) else []:
            if isinstance(target, ast.Name) and target.id in roots:
                lines.add(node.lineno)
            if isinstance(target, ast.Attribute) and target.attr in attributes:
                lines.add(node.lineno)
    return lines


def _as_in_process(whole, here, path: Path) -> dict:
    """The script's run's summary, with a problem placed where its variable was made said at
    the line the check in process names, where that line assigns an object holding the
    variable (no line of the user's assigns the variable itself)."""
    made = {v.name: v.source.line if v.source else None for v in whole.variables}
    made_here = {v.name: v.source.line if v.source else None for v in here.variables}
    expected = _summary(whole)
    problems = []
    for kind, severity, op_type, line, affected in expected["problems"]:
        there = made_here.get(affected[0])
        if not op_type and line == made.get(affected[0]) and there != line:
            assert there in _holder_lines(path, affected[0]), (affected[0], there)
            line = there
        problems.append((kind, severity, op_type, line, affected))
    return {**expected, "problems": sorted(problems)}


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_loss_checked_in_process_says_what_the_scripts_run_says(path):
    from tfviz.analysis.diagnose import analysis
    from tfviz.errors import AnalysisError

    try:
        whole = analysis(str(path)).report
    except AnalysisError:
        pytest.skip("the script's run is refused; the API's errors are tested in test_api.py")
    done, _ = _in_process(path)
    here = done.report
    assert _summary(here) == _as_in_process(whole, here, path)
    # every problem is placed on a line of the user's code
    assert all(p.source is not None and p.source.file == str(path) and p.source.line for p in here.problems)
