"""Saved analyses in the window: File > Save analysis… and opening a ``.json`` export.

Opening one shows the graph and the panels from the file alone: no worker starts, no
TensorFlow is imported, no code from the file or the script runs, nothing is unpickled
(:mod:`tfviz.analysisfile` checks every field first), and no file it names is read (the
Source panel shows the lines it carries). The file is read and checked on a thread, with a
progress dialog and Cancel: a 100 MB analysis takes seconds, and the window keeps
answering meanwhile. A file that is not a valid analysis is refused with a message;
refused or cancelled, the window is left as it was.
"""

from __future__ import annotations

import gc
import os
import threading

from PySide6.QtCore import QObject, Qt, QThread, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressDialog

from tfviz.analysisfile import AnalysisFileError, LoadCancelled, analysis_json, load_analysis
from tfviz.outputs import replacing
from tfviz.report import Report

from .display import summary


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
        window.stage.setText("Nothing to save yet: analyze a script first")
        return
    stem = os.path.splitext(os.path.basename(window.report.script or "analysis"))[0]
    start = os.path.join(os.path.dirname(window.script or ""), f"{stem}.tfviz.json")
    path, _ = QFileDialog.getSaveFileName(window, "Save analysis", start, "tfviz analysis (*.json)")
    if path:
        error = save(window.report, path)
        window.stage.setText(error or f"Saved the analysis to {path}")


def save(report: Report, path: str) -> str | None:
    """Write ``report`` as a saved analysis; the error in words, or None. The file is
    replaced only once complete (:func:`tfviz.outputs.replacing`): a failure (a full disk,
    Ctrl-C) leaves the analysis saved before intact, and a FIFO (which ``open`` blocked on)
    or a device is refused rather than written."""
    try:
        text = analysis_json(report)
        with replacing(path) as fh:
            fh.write(text)
    except OSError as exc:  # an OutputError says why in words
        return f"Could not save {path}: {exc.strerror or exc}"
    except ValueError as exc:  # a value JSON cannot hold; nothing was written
        return f"Could not save {path}: {exc}"
    return None


def open_saved(window, path: str, *, quiet: bool = False) -> SavedLoad:
    """Start showing the analysis saved at ``path``; it is read, checked and rebuilt on
    another thread, with a progress dialog whose Cancel stops it. On success the window
    shows it (and lists it in Open Recent); on error it says why (in a message box unless
    ``quiet``); cancelled, the window stays as it was. Any earlier load is cancelled."""
    cancel_load(window)
    load = SavedLoad(window, path, quiet)
    window.saved_load = load
    load.start()
    return load


def cancel_load(window) -> None:
    """Stop the saved analysis being opened, if any; the window stays as it was."""
    load = getattr(window, "saved_load", None)
    if load is not None:
        load.cancel()


def end_loads(window, wait_ms: int = 5000) -> None:
    """Before the window goes: cancel any load and wait for the reader threads to end
    (a thread destroyed while it runs takes the process down)."""
    cancel_load(window)
    for reader in window.findChildren(_Reader):
        reader.stop.set()
        reader.wait(wait_ms)


class _Reader(QThread):
    """Reads, checks and rebuilds the file off the GUI thread; says how far it got."""

    progressed = Signal(int, str)  # percent, stage
    loaded = Signal(object)  # the Report
    failed = Signal(str)  # why, in words

    def __init__(self, path: str, parent=None) -> None:
        super().__init__(parent)
        self.path = path
        self.stop = threading.Event()
        self._shown = -1

    def run(self) -> None:
        # The collector stays off until the report is built, then the report is frozen
        # (gc.freeze): a big file makes millions of objects, none in a cycle, and the first
        # collections after it would walk them all, each holding the interpreter (and the
        # window) for a second. The price: cyclic garbage among objects alive now is never
        # collected; replacing the analysis shown leaves a few hundred such objects.
        collecting = gc.isenabled()
        gc.disable()
        try:
            report = load_analysis(self.path, progress=self._progress, cancelled=self.stop.is_set)
        except LoadCancelled:
            return
        except AnalysisFileError as exc:
            self.failed.emit(str(exc))
            return
        except MemoryError:
            self.failed.emit(f"{self.path} is too large to open in the memory this machine has")
            return
        except Exception as exc:  # noqa: BLE001 - a file must never break the window
            self.failed.emit(f"{self.path} could not be read: {type(exc).__name__}: {exc}")
            return
        else:
            gc.freeze()
        finally:
            if collecting:
                gc.enable()
        if not self.stop.is_set():
            self.loaded.emit(report)

    def _progress(self, fraction: float, stage: str) -> None:
        percent = int(100 * fraction)
        if percent != self._shown:
            self._shown = percent
            self.progressed.emit(percent, stage)


class SavedLoad(QObject):
    """One saved analysis being opened: its reader thread and its progress dialog.

    ``finished`` is emitted once it is over: shown, refused or cancelled (``outcome``
    says which, ``error`` why it was refused)."""

    finished = Signal()

    def __init__(self, window, path: str, quiet: bool) -> None:
        super().__init__()  # owned by window.saved_load while it runs, then by whoever holds it
        self.window, self.path, self.quiet = window, path, quiet
        self.outcome = ""  # "shown", "refused" or "cancelled" once finished
        self.error: str | None = None
        self.reader = _Reader(path, window)  # the window waits for it before it goes (end_loads)
        self.reader.progressed.connect(self._progress, Qt.ConnectionType.QueuedConnection)
        self.reader.loaded.connect(self._loaded, Qt.ConnectionType.QueuedConnection)
        self.reader.failed.connect(self._failed, Qt.ConnectionType.QueuedConnection)
        self.dialog = QProgressDialog(f"Opening {os.path.basename(path)}…", "Cancel", 0, 100, window)
        self.dialog.setWindowTitle("Opening saved analysis")
        self.dialog.setWindowModality(Qt.WindowModality.WindowModal)
        self.dialog.setMinimumDuration(400)  # a small file opens without a dialog flashing up
        self.dialog.setAutoClose(False)
        self.dialog.setAutoReset(False)
        self.dialog.canceled.connect(lambda: self.cancel())
        self.dialog.setValue(0)
        self._before = window.stage.text()
        self._opening = f"Opening {os.path.basename(path)}…"
        window.stage.setText(self._opening)

    def start(self) -> None:
        self.reader.start()

    def running(self) -> bool:
        return not self.outcome

    def cancel(self) -> None:
        """Stop reading and forget the file; the window is left as it was before."""
        if self.outcome:
            return
        self.reader.stop.set()
        if self.window.stage.text() == self._opening:  # not since replaced by an analysis's stage
            self.window.stage.setText(self._before)
        self._detach()
        self._end("cancelled")

    def _progress(self, percent: int, stage: str) -> None:
        if not self.outcome:
            self.dialog.setLabelText(f"Opening {os.path.basename(self.path)}: {stage}…")
            self.dialog.setValue(percent)

    def _loaded(self, report: Report) -> None:
        if self.outcome:
            return
        self._detach()  # before it is shown: showing it cancels what the window was doing
        self.error = _show(self.window, self.path, report, self.quiet)
        self._end("shown" if self.error is None else "refused")

    def _failed(self, message: str) -> None:
        if self.outcome:
            return
        self._detach()
        self.error = _refuse(self.window, message, self.quiet)
        self._end("refused")

    def _detach(self) -> None:
        if getattr(self.window, "saved_load", None) is self:
            self.window.saved_load = None

    def _end(self, outcome: str) -> None:
        self.outcome = outcome
        self.dialog.canceled.disconnect()
        self.dialog.close()
        self.dialog.deleteLater()
        # The thread ends at its next check (a few milliseconds); it is deleted once it has.
        self.reader.finished.connect(self.reader.deleteLater)
        if self.reader.isFinished():
            self.reader.deleteLater()
        self.finished.emit()


def _show(window, path: str, report: Report, quiet: bool) -> str | None:
    """Show a checked report in the window; the error in words, or None."""
    old = window.report
    try:
        window._show_report(report)
    except Exception as exc:  # noqa: BLE001 - a file the checks let through must not break the window
        window._show_report(old)
        return _refuse(window, f"{path} could not be shown: {exc}", quiet)
    window.cancel(quiet=True)
    _forget_script(window)
    window.source_on_first_problem(report)  # the panel was emptied with the script
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
    window._add_recent(os.path.abspath(path))
    return None


def _refuse(window, message: str, quiet: bool) -> str:
    window.stage.setText("Could not open the saved analysis")
    if not quiet:
        box = QMessageBox(QMessageBox.Icon.Warning, "Cannot open analysis", message,
                          QMessageBox.StandardButton.Ok, window)
        box.open()  # not modal to the event loop: nothing waits on it
    return message


def _forget_script(window) -> None:
    """The window no longer shows a script: F5 and file watching have nothing to run."""
    if window.watcher.files():
        window.watcher.removePaths(window.watcher.files())
    window.script, window.target, window.run, window.args, window.step = None, None, False, [], 1
    window.source.forget_script()  # from now on no file is read into the Source panel
    jac = getattr(window, "jacobian", None)  # its session belongs to the script shown before
    if jac is not None and jac.worker is not None:
        jac._release(jac.worker)
        jac.worker, jac.script = None, None
        jac.panel.show_empty()
