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
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QThread, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QLabel, QMessageBox, QProgressDialog, QWidget

from tfviz.analysisfile import AnalysisFileError, LoadCancelled, analysis_json, load_analysis
from tfviz.outputs import replacing
from tfviz.report import Report

from .analysis import AnalysisController


def is_saved_analysis(path: str) -> bool:
    """>>> is_saved_analysis("bug/Analysis.JSON"), is_saved_analysis("train.py")
    (True, False)"""
    return path.lower().endswith(".json")


class SaveAnalysis(QObject):
    """File > Save analysis… (Ctrl+Shift+S): the report ``analysis`` holds, written as JSON;
    ``say`` puts the outcome in the status bar."""

    def __init__(self, analysis: AnalysisController, parent: QWidget, say: Callable[[str], None]) -> None:
        super().__init__(parent)
        self.analysis, self.say, self.owner = analysis, say, parent
        a = self.action = QAction("Save &analysis…", parent)
        a.setShortcut(QKeySequence("Ctrl+Shift+S"))
        a.setStatusTip("Write the analysis as JSON; tfviz opens it without the script")
        a.triggered.connect(self.save_dialog)

    def follow(self) -> None:
        """Enabled whenever there is a report (called as the File menu opens)."""
        self.action.setEnabled(self.analysis.report is not None)

    def save_dialog(self) -> None:
        report = self.analysis.report
        if report is None:
            self.say("Nothing to save yet: analyze a script first")
            return
        stem = os.path.splitext(os.path.basename(report.script or "analysis"))[0]
        start = os.path.join(os.path.dirname(self.analysis.script or ""), f"{stem}.tfviz.json")
        path, _ = QFileDialog.getSaveFileName(self.owner, "Save analysis", start, "tfviz analysis (*.json)")
        if path:
            error = save(report, path)
            self.say(error or f"Saved the analysis to {path}")


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


class SavedLoader(QObject):
    """Opens saved analyses for a window, one at a time: ``current`` is the load in
    progress; ``show(path, report)`` shows a checked report and returns why it could not
    (None when shown)."""

    def __init__(self, window: QWidget, stage: QLabel, show: Callable[[str, Report], str | None]) -> None:
        super().__init__(window)
        self.window, self.stage, self.show = window, stage, show
        self.current: SavedLoad | None = None

    def open(self, path: str, *, quiet: bool = False) -> SavedLoad:
        """Start showing the analysis saved at ``path``; it is read, checked and rebuilt on
        another thread, with a progress dialog whose Cancel stops it. On success the window
        shows it; on error it says why (in a message box unless ``quiet``); cancelled, the
        window stays as it was. Any earlier load is cancelled."""
        self.cancel()
        load = self.current = SavedLoad(self, path, quiet)
        load.finished.connect(lambda: self._done(load))
        load.start()
        return load

    def _done(self, load: SavedLoad) -> None:
        if self.current is load:
            self.current = None

    def cancel(self) -> None:
        """Stop the saved analysis being opened, if any; the window stays as it was."""
        if self.current is not None:
            self.current.cancel()

    def end(self, wait_ms: int = 5000) -> None:
        """Before the window goes: cancel any load and wait for the reader threads to end
        (a thread destroyed while it runs takes the process down)."""
        self.cancel()
        for reader in self.window.findChildren(_Reader):
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

    def __init__(self, loader: SavedLoader, path: str, quiet: bool) -> None:
        super().__init__()  # owned by loader.current while it runs, then by whoever holds it
        self.loader, self.path, self.quiet = loader, path, quiet
        window, self.stage = loader.window, loader.stage
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
        self._before = self.stage.text()
        self._opening = f"Opening {os.path.basename(path)}…"
        self.stage.setText(self._opening)

    def start(self) -> None:
        self.reader.start()

    def running(self) -> bool:
        return not self.outcome

    def cancel(self) -> None:
        """Stop reading and forget the file; the window is left as it was before."""
        if self.outcome:
            return
        self.reader.stop.set()
        if self.stage.text() == self._opening:  # not since replaced by an analysis's stage
            self.stage.setText(self._before)
        self._end("cancelled")

    def _progress(self, percent: int, stage: str) -> None:
        if not self.outcome:
            self.dialog.setLabelText(f"Opening {os.path.basename(self.path)}: {stage}…")
            self.dialog.setValue(percent)

    def _loaded(self, report: Report) -> None:
        if self.outcome:
            return
        self.loader.current = None  # before it is shown: showing it cancels what the window was doing
        error = self.loader.show(self.path, report)
        self.error = None if error is None else self._refuse(error)
        self._end("shown" if self.error is None else "refused")

    def _failed(self, message: str) -> None:
        if self.outcome:
            return
        self.error = self._refuse(message)
        self._end("refused")

    def _refuse(self, message: str) -> str:
        self.stage.setText("Could not open the saved analysis")
        if not self.quiet:
            box = QMessageBox(
                QMessageBox.Icon.Warning,
                "Cannot open analysis",
                message,
                QMessageBox.StandardButton.Ok,
                self.loader.window,
            )
            box.open()  # not modal to the event loop: nothing waits on it
        return message

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
