"""Program mode in the window: training scripts open as they are (no loss() to write),
the analysis bar switches between the first gradient step and named targets, passes
the program's arguments and step, the Log shows its output live, and a hang can be
cancelled. Real window, real worker."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from conftest import ANALYSIS_TIMEOUT_MS, EXAMPLES, ROOT, SCRIPTS
from PySide6.QtCore import Qt
from test_failures import _alive


def _open(qtbot, window, script, **kw) -> None:
    window.analysis.report = None
    window.analysis.last_error = None
    window.open_script(str(script), **kw)
    qtbot.waitUntil(lambda: not window.analysis.busy(), timeout=ANALYSIS_TIMEOUT_MS)


def _wait_done(qtbot, window) -> None:
    a = window.analysis
    qtbot.waitUntil(lambda: not a.busy() and bool(a.report or a.last_error), timeout=ANALYSIS_TIMEOUT_MS)


def _focus_window(qtbot, window) -> None:
    """Make the main window active again (offscreen, a closed popup keeps activation)."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    window.graph.view.setFocus()


def _entries(window) -> list[str]:
    c = window.bar.combo
    return [c.itemText(i) for i in range(c.count())]


def test_seed1_program_opens_as_it_is(qtbot, window):
    _open(qtbot, window, EXAMPLES / "program_seed1_svd.py", args=[])
    assert window.analysis.last_error is None, window.analysis.last_error
    report = window.analysis.report
    assert report.mode == "program" and window.analysis.mode == "program"
    broken = {v.name for v in report.variables if v.status == "broken"}
    assert broken == {f"{side}[{i}]" for side in ("upper", "lower") for i in range(5)}
    kinds = {window.problems.topLevelItem(i).text(1) for i in range(window.problems.topLevelItemCount())}
    assert any("Svd" in k for k in kinds), kinds
    # the status says what was analyzed: the step, described, not a function name
    status = window.stage.text()
    assert status.startswith("First gradient step: ") and report.target in status
    assert "10/10 variables without gradient" in status
    # program mode: arguments and step are offered; no named target, so no picker
    assert window.bar.isVisible()
    assert window.bar.is_shown("args") and window.bar.is_shown("step")
    assert not window.bar.is_shown("combo")
    assert "── running program_seed1_svd.py to its first gradient step" in window.log.toPlainText()


def test_seed2_fit_program_names_the_frozen_copy(qtbot, window):
    _open(qtbot, window, EXAMPLES / "program_seed2_fit.py", args=[])
    assert window.analysis.last_error is None, window.analysis.last_error
    assert window.analysis.report.mode == "program"
    assert "Model.fit" in window.stage.text()
    frozen = [v for v in window.analysis.report.variables if v.kind == "frozen_copy"]
    assert frozen, [(v.name, v.kind) for v in window.analysis.report.variables]
    assert window.variables.select_name(frozen[0].name)
    assert window.variables.currentItem().text(2) == "none: frozen_copy"


def test_picker_switches_between_program_and_named_target(qtbot, window):
    script = SCRIPTS / "program_and_target.py"
    _open(qtbot, window, script, args=[])
    assert window.analysis.last_error is None, window.analysis.last_error
    bar = window.bar
    assert window.analysis.report.mode == "program"
    kinds = {v.name: v.kind for v in window.analysis.report.variables}
    assert kinds == {"w_main": None, "w_side": "stop_gradient"}
    assert _entries(window) == ["First gradient step", "probe()"]
    assert bar.is_shown("combo") and bar.combo.currentIndex() == 0 and bar.is_shown("args")
    assert "program mode: training" in window.log.toPlainText()

    # by keyboard: Ctrl+T goes to the picker, Down picks the named target
    _focus_window(qtbot, window)
    qtbot.keyClick(window.graph.view, Qt.Key_T, Qt.ControlModifier)
    bar.combo.hidePopup()  # it opened the list; Down on the closed picker chooses too
    assert bar.combo.hasFocus()
    window.analysis.report = None
    qtbot.keyClick(bar.combo, Qt.Key_Down)
    _wait_done(qtbot, window)
    assert window.analysis.last_error is None, window.analysis.last_error
    assert window.analysis.report.mode == "target" and window.analysis.report.target == "probe"
    assert {v.name: v.status for v in window.analysis.report.variables} == {
        "w_main": "connected",
        "w_side": "connected",
    }
    assert bar.combo.currentText() == "probe()"
    assert not bar.is_shown("args") and not bar.is_shown("step")  # a function has no command line
    assert window.stage.text().startswith("probe() — all gradients flow")

    window.analysis.report = None
    qtbot.keyClick(bar.combo, Qt.Key_Up)
    _wait_done(qtbot, window)
    assert window.analysis.report.mode == "program"
    assert {v.name: v.kind for v in window.analysis.report.variables}["w_side"] == "stop_gradient"
    assert bar.combo.currentIndex() == 0 and bar.is_shown("args")


def test_program_arguments_from_the_bar_are_used_and_remembered(qtbot, window):
    script = EXAMPLES / "program_argv.py"
    _open(qtbot, window, script, args=[])
    # argparse rejects the empty command line: the message and its usage text, no crash
    err = window.analysis.last_error
    assert err is not None and "exited (status 2)" in err["message"]
    assert "--lr" in err["detail"] and "usage:" in err["detail"]
    banner = window.banner.plain_text()
    assert "exited (status 2)" in banner and "Command line: program_argv.py (no arguments)" in banner
    assert window.stage.text() == "Analysis failed"
    assert window.bar.is_shown("args")

    # Ctrl+L goes to the field; type the arguments and press Enter: the program runs with them
    edit = window.bar.args_edit
    _focus_window(qtbot, window)
    qtbot.keyClick(window.graph.view, Qt.Key_L, Qt.ControlModifier)
    qtbot.waitUntil(edit.hasFocus, timeout=5000)  # focus events arrive late on a loaded machine
    qtbot.keyClicks(edit, "--lr 0.1")
    window.analysis.report = None
    qtbot.keyClick(edit, Qt.Key_Return)
    _wait_done(qtbot, window)
    assert window.analysis.last_error is None, window.analysis.last_error
    assert window.analysis.report.mode == "program"
    assert {v.status for v in window.analysis.report.variables} == {"connected"}
    assert window.analysis.args == ["--lr", "0.1"]
    assert "running program_argv.py --lr 0.1 to its first gradient step" in window.log.toPlainText()

    # remembered per script, across restarts: another process reads them from the settings file
    window.settings.sync()
    code = (
        "from PySide6.QtCore import QSettings; import sys; "
        'print(QSettings("tfviz", "tfviz").value("program_args", {}).get(sys.argv[1]))'
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(script)], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert out.stdout.strip() == "--lr 0.1", out.stderr
    assert window.analysis.saved_args(str(script)) == ["--lr", "0.1"]
    assert window.analysis.saved_args(str(EXAMPLES / "program_seed1_svd.py")) == []


def test_step_spin_box_picks_the_nth_gradient_step(qtbot, window):
    script = EXAMPLES / "program_argv.py"
    _open(qtbot, window, script, args=["--lr", "0.1", "--epochs", "3"])
    assert window.analysis.last_error is None, window.analysis.last_error
    log_before = len(window.log.toPlainText())
    window.analysis.report = None
    window.bar.step_spin.setValue(2)  # debounced: one run after the arrows stop
    _wait_done(qtbot, window)
    assert window.analysis.step == 2 and window.analysis.last_error is None, window.analysis.last_error
    assert window.stage.text().startswith("Gradient step 2: ")
    assert _entries(window)[0] == "Gradient step 2"
    log = window.log.toPlainText()[log_before:]
    assert "to its gradient step 2" in log
    assert "epoch 1: loss" in log and "epoch 2: loss" not in log  # stopped at the second step


def test_log_shows_program_output_while_it_runs(qtbot, window):
    """The first line must be on screen while the program still sleeps, not with the result."""
    window.analysis.report = None
    window.open_script(str(SCRIPTS / "program_slow_start.py"), args=[])
    qtbot.waitUntil(lambda: "loading the data…" in window.log.toPlainText(), timeout=ANALYSIS_TIMEOUT_MS)
    seen_at = time.perf_counter()
    assert window.analysis.busy() and window.analysis.report is None
    assert "data loaded" not in window.log.toPlainText()
    _wait_done(qtbot, window)
    assert window.analysis.last_error is None, window.analysis.last_error
    assert "data loaded" in window.log.toPlainText()
    assert time.perf_counter() - seen_at > 2.0  # the first line came ~5 s before the end


def test_esc_cancels_a_program_that_hangs_before_its_first_step(qtbot, window):
    window.open_script(str(SCRIPTS / "program_hang.py"), args=["--epochs", "2"])
    worker = window.analysis.worker
    assert worker is not None and window.analysis.mode == "program"
    qtbot.waitUntil(
        lambda: "waiting for the data loader" in window.log.toPlainText(), timeout=ANALYSIS_TIMEOUT_MS
    )
    pid = worker.pid
    assert _alive(pid)
    t0 = time.perf_counter()
    _focus_window(qtbot, window)
    qtbot.keyClick(window.graph.view, Qt.Key_Escape)
    qtbot.waitUntil(lambda: not _alive(pid), timeout=1000)
    assert time.perf_counter() - t0 < 1.0
    assert not window.analysis.busy() and window.stage.text() == "Cancelled"
    assert window.bar.is_shown("args") and window.bar.args_edit.text() == "--epochs 2"


def test_program_without_gradient_says_so(qtbot, window):
    _open(qtbot, window, EXAMPLES / "program_no_gradient.py", args=[])
    err = window.analysis.last_error
    assert err is not None and window.analysis.report is None
    assert "ran to the end without computing a gradient" in err["message"]
    assert "predicted classes" in err["detail"]  # the stdout tail
    assert window.banner.isVisible() and "without computing a gradient" in window.banner.plain_text()
    assert "predicted classes" in window.banner.detail.toPlainText()
    assert window.stage.text() == "Analysis failed"


def test_command_line_passes_program_arguments_to_the_window(monkeypatch):
    import app.launch
    import app.main

    calls = []
    monkeypatch.setattr(app.main, "run_app", lambda *a, **kw: calls.append((a, kw)) or 0)
    path = str(EXAMPLES / "program_argv.py")
    assert app.launch.main([path, "--", "--lr", "0.1"]) == 0
    assert app.launch.main(["open", path, "--run", "--step", "3", "--", "--lr", "0.1"]) == 0
    assert app.launch.main([path]) == 0
    assert calls == [
        ((path, None), {"run": False, "args": ["--lr", "0.1"], "step": 1}),
        ((path, None), {"run": True, "args": ["--lr", "0.1"], "step": 3}),
        ((path, None), {"run": False, "args": None, "step": 1}),
    ]
    assert app.launch.main(["open", path, "--target", "loss", "--", "--lr", "0.1"]) == 2


def test_open_with_run_and_step_reaches_the_worker_request(qtbot, window, monkeypatch):
    """make_window's arguments become the worker request (checked on the request itself)."""
    from app.worker_client import Worker

    sent = []
    monkeypatch.setattr(Worker, "analyze", lambda self, *a, **kw: sent.append((a, kw)))
    path = str(EXAMPLES / "seed3_chain_rule.py")  # defines loss(): run=True still runs the program
    window.open_script(path, run=True, args=["--x", "1"], step=4)
    window.cancel(quiet=True)
    assert sent == [((path, None), {"run": True, "args": ["--x", "1"], "step": 4})]
    assert window.analysis.mode == "program" and window.bar.combo.currentIndex() == 0
    assert window.bar.combo.itemText(0) == "Gradient step 4"
    assert os.path.basename(path) in window.windowTitle()
    window.open_script(path)  # same script, plain open: a loss() script is analyzed as its target
    window.cancel(quiet=True)
    assert sent[-1] == ((path, None), {}) and window.analysis.mode == "target"


def test_the_reports_notes_are_in_the_log(qtbot, window):
    """A gradient taken inside another recording tape (MAML's inner step): the text report's
    note, that the training step is that tape's own call, is in the Log too."""
    _open(qtbot, window, ROOT / "tests" / "programs" / "tapes" / "maml_inner_step.py", args=[])
    report = window.analysis.report
    assert report is not None, window.analysis.last_error
    (note,) = [n for n in report.notes if "second order" in n]
    assert f"── {note}" in window.log.toPlainText()
    assert window.stage.text().endswith(" · 1 note in the Log")  # the Log is not the tab in front
