"""Saved analyses in the window: File > Save analysis… and opening a ``.json`` export.

Opening one shows the graph and the panels from the file alone: no worker starts, no
TensorFlow is imported, no code from the file or the script runs, nothing is unpickled
(:mod:`tfviz.analysisfile` checks every field first). A file that is not a valid
analysis is refused with a message and the window is left as it was.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMessageBox

from app.display import summary
from tfviz.analysisfile import AnalysisFileError, analysis_json, load_analysis
from tfviz.report import Report, Source

#: Source files larger than this are not read into the Source panel from a saved analysis.
_MAX_SOURCE_BYTES = 16 * 2**20


def is_saved_analysis(path: str) -> bool:
    """>>> is_saved_analysis("bug/Analysis.JSON"), is_saved_analysis("train.py")
    (True, False)"""
    return path.lower().endswith(".json")


def install_save_action(window, menu) -> QAction:
    """File > Save analysis… (Ctrl+Shift+S), enabled whenever the window shows a report."""
    a = QAction("Save &analysis…", window)
    a.setShortcut(QKeySequence("Ctrl+Shift+S"))
    a.setStatusTip("Write the analysis as JSON; tfviz opens it without the script")
    a.triggered.connect(lambda: save_dialog(window))
    menu.aboutToShow.connect(lambda: a.setEnabled(window.report is not None))
    menu.addAction(a)
    return a


def save_dialog(window) -> None:
    if window.report is None:
        window.stage.setText("Nothing to save yet: analyse a script first")
        return
    stem = os.path.splitext(os.path.basename(window.report.script or "analysis"))[0]
    start = os.path.join(os.path.dirname(window.script or ""), f"{stem}.tfviz.json")
    path, _ = QFileDialog.getSaveFileName(window, "Save analysis", start, "tfviz analysis (*.json)")
    if path:
        error = save(window.report, path)
        window.stage.setText(error or f"Saved the analysis to {path}")


def save(report: Report, path: str) -> str | None:
    """Write ``report`` as a saved analysis; the error in words, or None."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(analysis_json(report))
    except OSError as exc:
        return f"Could not save {path}: {exc.strerror or exc}"
    return None


def open_saved(window, path: str, *, quiet: bool = False) -> str | None:
    """Show the analysis saved at ``path``; the error in words (also shown, unless
    ``quiet``), or None. On error nothing in the window changes."""
    try:
        report = load_analysis(path)
    except AnalysisFileError as exc:
        return _refuse(window, str(exc), quiet)
    _guard_sources(report)
    old = window.report
    try:
        window._show_report(report)
    except Exception as exc:  # noqa: BLE001 - a file the checks let through must not break the window
        window._show_report(old)
        return _refuse(window, f"{path} could not be shown: {exc}", quiet)
    window.cancel(quiet=True)
    _forget_script(window)
    window.report, window.mode = report, report.mode
    window.banner.hide()
    window.bar.hide()
    window.stack.setCurrentWidget(window.graph)
    name = os.path.basename(path)
    window.setWindowTitle(f"tfviz — {name} (saved analysis)")
    window.log.note(f"opened the saved analysis {path}: {report.script}, {report.target}"
                    f" (tfviz {report.tfviz or '?'}, TensorFlow {report.tensorflow or '?'}); nothing was run")
    window._idle(f"Saved analysis {name} — {summary(report)}")
    window.stage.setToolTip(f"{report.script}\n{report.target}")
    return None


def _refuse(window, message: str, quiet: bool) -> str:
    window.stage.setText("Could not open the saved analysis")
    if not quiet:
        box = QMessageBox(QMessageBox.Warning, "Cannot open analysis", message, QMessageBox.Ok, window)
        box.open()  # not modal to the event loop: nothing waits on it
    return message


def _forget_script(window) -> None:
    """The window no longer shows a script: F5 and file watching have nothing to run."""
    if window.watcher.files():
        window.watcher.removePaths(window.watcher.files())
    window.script, window.target, window.run, window.args, window.step = None, None, False, [], 1
    jac = getattr(window, "jacobian", None)  # its session belongs to the script shown before
    if jac is not None and jac.worker is not None:
        jac._release(jac.worker)
        jac.worker, jac.script = None, None
        jac.panel.show_empty()


def _guard_sources(report: Report) -> None:
    """Source lines name files on the machine that analysed the script. Where such a path
    here is a device, a FIFO or a huge file, the Source panel must not read it."""
    seen: dict[str, bool] = {}

    def readable(f: str) -> bool:
        if f not in seen:
            try:
                seen[f] = not os.path.exists(f) or (
                    os.path.isfile(f) and os.path.getsize(f) <= _MAX_SOURCE_BYTES)
            except (OSError, ValueError):
                seen[f] = False
        return seen[f]

    for s in _sources(report):
        if not readable(s.file):
            s.file = f"{s.file} (not a regular source file; not read)"


def _sources(obj: object) -> Iterator[Source]:
    """Every source line anywhere in the report (ops, variables, problems, functions…)."""
    if isinstance(obj, Source):
        yield obj
    elif isinstance(obj, list):
        for x in obj:
            yield from _sources(x)
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from _sources(getattr(obj, f.name))
