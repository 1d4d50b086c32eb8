"""Scripts that segfault, hang or raise: the window survives and says what happened."""

from __future__ import annotations

import os
import time

from conftest import ANALYSIS_TIMEOUT_MS, EXAMPLES, SCRIPTS, run_analysis
from PySide6.QtCore import Qt


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie counts as dead
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_segfault_is_reported_with_trace(qtbot, window):
    run_analysis(qtbot, window, SCRIPTS / "segfault.py")
    assert window.banner.isVisible()
    text = window.banner.plain_text()
    assert "the script's process ended with signal SIGSEGV before tfviz could answer" in text
    assert "Fatal Python error" in window.banner.detail.toPlainText()  # faulthandler's trace
    assert "segfault.py" in window.banner.detail.toPlainText()
    err = window.analysis.last_error
    assert err["file"].endswith("segfault.py") and err["line"] == 4
    assert window.source.marked_line == 4  # the line that crashed, from the trace
    assert window.stage.text() == "The script's process ended"


def test_os_exit_says_how_the_process_ended(qtbot, window):
    run_analysis(qtbot, window, SCRIPTS / "os_exit.py")
    text = window.banner.plain_text()
    assert "the script ended its process with exit status 3 (os._exit) before tfviz could answer" in text, (
        text
    )
    assert "run it again" in text  # a program's banner: edit the arguments and press Enter
    assert "about to call os._exit(3)" in window.log.toPlainText()  # printed just before: not lost


def test_sys_exit_is_reported_with_its_line_and_f5_runs_again(qtbot, window):
    run_analysis(qtbot, window, SCRIPTS / "sys_exit.py")
    err = window.analysis.last_error
    assert "called sys.exit(0)" in err["message"], err
    assert err["line"] == 7 and "sys_exit.py" in window.banner.plain_text()
    assert "os._exit" not in window.banner.plain_text() and "status 0" not in window.banner.plain_text()
    window.analysis.last_error = None
    window.activateWindow()
    qtbot.keyClick(window, Qt.Key_F5)
    assert window.analysis.busy()  # F5 started a new analysis
    qtbot.waitUntil(lambda: not window.analysis.busy(), timeout=ANALYSIS_TIMEOUT_MS)
    assert "called sys.exit(0)" in window.analysis.last_error["message"]


def test_raise_shows_message_and_line(qtbot, window):
    run_analysis(qtbot, window, SCRIPTS / "raises.py")
    err = window.analysis.last_error
    assert err is not None and "boom from the test script" in err["message"] + err.get("detail", "")
    assert window.banner.isVisible()
    assert "raises.py" in window.banner.plain_text()
    if err.get("line"):
        assert window.source.marked_line == err["line"]


def test_esc_key_cancels_a_hang_within_a_second(qtbot, window):
    """A real Esc key press (not a direct call) reaches the Cancel shortcut and kills the worker."""
    window.open_script(str(SCRIPTS / "hang.py"))
    worker = window.analysis.worker
    assert worker is not None and window.cancel_btn.isVisible()
    qtbot.waitUntil(lambda: "about to hang" in window.log.toPlainText(), timeout=120_000)
    pid = worker.pid
    t0 = time.perf_counter()
    window.activateWindow()
    window.graph.view.setFocus()
    qtbot.keyClick(window.graph.view, Qt.Key_Escape)
    qtbot.waitUntil(lambda: not _alive(pid), timeout=1000)
    assert time.perf_counter() - t0 < 1.0
    assert not window.analysis.busy() and window.stage.text() == "Cancelled"
    assert not window.cancel_btn.isVisible()


def test_window_still_works_after_failures(qtbot, window):
    """A healthy example opened after the crashes gives a normal result, with no banner left."""
    run_analysis(qtbot, window, EXAMPLES / "healthy_control_flow.py")
    assert window.analysis.last_error is None, window.analysis.last_error
    report = window.analysis.report
    assert report is not None and report.ok and not report.problems
    assert not window.banner.isVisible()
    assert window.stack.currentWidget() is window.graph
