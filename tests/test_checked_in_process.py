"""A script's ``loss()`` checked in the caller's process, as a notebook checks it: its objects
made before the check (an earlier cell built the model and called it), so nothing records how
they were made. It must give the answer tfviz gives when it runs the whole script and records
every tensor's making: the same verdicts, kinds, problems and lines. Its copies of a variable
made before the check are found by their values, or by the line that made them reading the
variable (:mod:`tfviz.analysis.earliercopies`), where the script's run finds them by their
recorded lineage.

The one difference allowed, and asserted: a problem the script's run places where a Keras
layer's variable was made (by Keras' own code, called from the user's line) is placed at the
target's ``def``, for no assignment of the user's holds that variable."""

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


def _as_in_process(whole, here, names: dict) -> dict:
    """The script's run's summary, with a problem placed where its variable was made said at
    the target's ``def`` where the check in process finds no line that made that variable."""
    loss = names["loss"]
    loss_line = getattr(loss, "python_function", loss).__code__.co_firstlineno
    made = {v.name: v.source.line if v.source else None for v in whole.variables}
    made_here = {v.name: v.source.line if v.source else None for v in here.variables}
    expected = _summary(whole)
    problems = []
    for kind, severity, op_type, line, affected in expected["problems"]:
        if not op_type and line == made.get(affected[0]) and made_here.get(affected[0]) is None:
            line = loss_line
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
    done, names = _in_process(path)
    here = done.report
    assert _summary(here) == _as_in_process(whole, here, names)
    # every problem is placed on a line of the user's code
    assert all(p.source is not None and p.source.file == str(path) and p.source.line for p in here.problems)
