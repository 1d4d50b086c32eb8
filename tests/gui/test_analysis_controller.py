"""The analysis controller on its own, without a window: what is asked, the run, the answer.

The window only renders what the controller says, so an analysis can be driven and
watched through the controller's signals alone.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from tests.gui.conftest import ANALYSIS_TIMEOUT_MS, EXAMPLES, SCRIPTS


@pytest.fixture
def analysis(qapp, worker_pool, tmp_path):
    from app.analysis import AnalysisController

    a = AnalysisController(worker_pool, QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    seen: list[str] = []
    for name in (
        "scriptOpened",
        "starting",
        "workerTaken",
        "reportReady",
        "failed",
        "crashed",
        "cancelled",
        "ended",
    ):
        getattr(a, name).connect(lambda *args, name=name: seen.append(name))
    a.seen = seen  # type: ignore[attr-defined]
    yield a
    a.cancel(quiet=True)


def test_an_analysis_driven_without_a_window(qtbot, analysis):
    script = EXAMPLES / "kind_stop_gradient.py"
    analysis.open(str(script))
    assert analysis.busy() and analysis.script == str(script) and analysis.mode == "target"
    qtbot.waitUntil(lambda: not analysis.busy(), timeout=ANALYSIS_TIMEOUT_MS)
    assert analysis.last_error is None, analysis.last_error
    report = analysis.report
    assert report is not None and report.target == "loss"
    assert {v.name: v.kind for v in report.variables} == {"student": None, "teacher": "stop_gradient"}
    assert analysis.seen == ["scriptOpened", "starting", "workerTaken", "reportReady", "ended"]
    assert analysis.describe(report) == "loss()"


def test_program_arguments_are_remembered_per_script(qtbot, analysis):
    script = str(SCRIPTS / "program_hang.py")
    analysis.open(script, None, run=True, args=["--epochs", "3"], step=2)
    assert analysis.mode == "program" and analysis.what_runs().endswith("--epochs 3 to its gradient step 2")
    analysis.cancel()
    assert analysis.seen[-1] == "cancelled" and not analysis.busy() and analysis.report is None
    assert analysis.saved_args(script) == ["--epochs", "3"]
    other = str(SCRIPTS / "hang.py")
    analysis.open(other, "loss")
    assert analysis.args == [] and analysis.step == 1  # another script: its own arguments
    analysis.open(script, None, run=True)
    assert analysis.args == ["--epochs", "3"]  # read back for this one


def test_a_crash_arrives_as_an_error_with_its_trace(qtbot, analysis):
    analysis.open(str(SCRIPTS / "segfault.py"))
    qtbot.waitUntil(lambda: not analysis.busy(), timeout=ANALYSIS_TIMEOUT_MS)
    assert "crashed" in analysis.seen and analysis.report is None
    err = analysis.last_error
    assert err is not None and err["file"].endswith("segfault.py") and err["detail"]
