"""The analysis the window shows: what was asked, the worker that answers it, and the answer.

:class:`AnalysisController` owns the state every panel reads (the script, the target or
the program with its arguments and step, a watched run, the report and the last error)
and the worker process that computes it. It has no widget: the window and the features
(the Jacobian, Save, Export) connect to its signals and read its fields, so nothing has to
reach into the window for them, and a test can drive an analysis without one.

Which mode a plain open gets is read from the source (:func:`tfviz.script.scriptinfo.choose_mode`)
without running it, so the analysis bar is right even when the analysis fails (a program
that rejects its arguments needs the Arguments field most).
"""

from __future__ import annotations

import os
import shlex
import time

from PySide6.QtCore import QObject, QSettings, Signal

from tfviz.report import Report
from tfviz.safefile import read_regular
from tfviz.script.scriptinfo import choose_mode, static_targets

from .analysis_bar import step_name
from .panels.source_view import MAX_SOURCE_BYTES
from .panels.training import WatchRequest
from .worker_client import Worker, WorkerPool


class AnalysisController(QObject):
    """One analysis at a time, each in a worker taken from the pool (warm when possible).

    Cancel kills the worker; a crash arrives as ``crashed`` with the worker's exit status
    and faulthandler trace. A watched run (*Run until…*) runs the program step after step
    and diagnoses the first step where a gradient goes wrong; :meth:`reload` repeats
    whichever of the two was asked for last."""

    scriptOpened = Signal(str, bool)  # the script's path; True when it is another script
    starting = Signal()  # the fields are set for a new run; the worker is not taken yet
    workerTaken = Signal(object)  # the Worker that runs it (the Jacobian session attaches)
    progress = Signal(str, float)  # stage, fraction done
    log = Signal(str, str)  # the script's output: stream, text
    steps = Signal(list)  # a watched run's points
    reportReady = Signal(object)  # the Report (``report`` is set already)
    failed = Signal(dict)  # the error, as the worker or this controller said it
    crashed = Signal(dict)  # the worker ended without an answer: how, with its trace
    cancelled = Signal(bool)  # a run was stopped; True when quietly (a new one replaces it)
    ended = Signal()  # the run's worker answered or ended: no run is in progress

    def __init__(self, pool: WorkerPool, settings: QSettings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = pool
        self.settings = settings
        self.script: str | None = None
        self.target: str | None = None  # the function asked for (None: loss, or the program)
        self.run = False  # the program was asked for explicitly ("First gradient step")
        self.args: list[str] = []
        self.step = 1
        self.mode = "target"  # what the current analysis is: "target" or "program"
        self.watching: WatchRequest | None = None  # a watched run was asked for last (Run until…)
        self.named_targets: list[str] = []
        self.worker: Worker | None = None
        self.report: Report | None = None
        self.last_error: dict | None = None
        self.result_at = 0.0  # when the last result arrived (perf_counter), for latency figures

    # -- what is asked ------------------------------------------------------------------
    def open(
        self,
        path: str,
        target: str | None = None,
        *,
        run: bool = False,
        args: list[str] | None = None,
        step: int | None = None,
    ) -> None:
        """Analyze the script at ``path``: the function ``target``, or (``run``, or a script
        without ``loss()``) the program with ``args`` (default: those remembered for this
        script) up to its ``step``-th gradient computation (default: 1 for a new script)."""
        path = os.path.abspath(path)
        new = path != self.script
        self.watching = None  # one step, as asked: not a watched run
        if new:
            self.report = None
        self.script, self.target, self.run = path, target or None, bool(run) and not target
        if args is not None:
            self.args = list(args)
            self.remember_args(path, self.args)
        elif new:
            self.args = self.saved_args(path)
        if step is not None or new:
            self.step = max(1, int(step or 1))
        self.scriptOpened.emit(path, new)
        self.start()

    def watch(self, request: WatchRequest) -> None:
        """Run the program, watching every gradient step, until one of ``request.until`` holds."""
        if not self.script or not request.until:
            return
        self.watching = request
        self.target, self.run = None, True
        self.start()

    def set_program(self, args: list[str], step: int) -> None:
        """The program's command line and step, as edited (remembered for the script)."""
        if args != self.args and self.script:
            self.remember_args(self.script, args)
        self.args, self.step = list(args), max(1, int(step))

    def forget_script(self) -> None:
        """Nothing is analyzed any more (a saved analysis is shown): reload has nothing to run."""
        self.cancel(quiet=True)
        self.script, self.target, self.run, self.args, self.step = None, None, False, [], 1
        self.watching = None

    def show_saved(self, report: Report) -> None:
        """A saved analysis is what is shown: its report, no script."""
        self.forget_script()
        self.report, self.mode, self.last_error = report, report.mode, None

    def saved_args(self, path: str) -> list[str]:
        """The arguments last used for the program at ``path`` (kept across restarts)."""
        saved = self.settings.value("program_args", {})
        text = saved.get(path, "") if isinstance(saved, dict) else ""
        try:
            return shlex.split(text)
        except ValueError:
            return []

    def remember_args(self, path: str, args: list[str]) -> None:
        saved = self.settings.value("program_args", {})
        saved = dict(saved) if isinstance(saved, dict) else {}
        if args:
            saved[path] = shlex.join(args)
        else:
            saved.pop(path, None)
        self.settings.setValue("program_args", saved)

    def read_script(self) -> str:
        """The script's text, read without ever waiting on it (a FIFO, ``/proc/kmsg``)."""
        if self.script is None:
            return ""
        try:
            return read_regular(self.script, MAX_SOURCE_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return ""  # the analysis says what is wrong with the file

    def what_runs(self) -> str:
        """The run about to start, in words, for the Log panel."""
        name = os.path.basename(self.script or "")
        if self.watching is not None:
            return (
                f"running {shlex.join([name, *self.args])}, watching every gradient step"
                f" until {self.watching.words()}"
            )
        if self.mode == "program":
            what = "its first gradient step" if self.step == 1 else f"its gradient step {self.step}"
            return f"running {shlex.join([name, *self.args])} to {what}"
        return f"analyzing {name}, target {self.target or 'loss'}()"

    def describe(self, report: Report) -> str:
        """What was analyzed, for the status bar: 'First gradient step: tape.gradient at x.py:9'."""
        if report.watch is not None and report.watch.step is not None:  # a watched run stopped there
            return f"{report.watch.fired} at gradient step {report.watch.step:,}: {report.target}"
        if report.mode == "program":
            return f"{step_name(self.step)}: {report.target}"
        return f"{report.target}()"

    # -- the run ------------------------------------------------------------------------
    def reload(self) -> None:
        """Analyze the script again, as last asked."""
        if self.script:
            self.start()

    def start(self) -> None:
        if self.script is None:
            return
        self.cancel(quiet=True)
        self.last_error = None
        source = self.read_script()
        self.named_targets = static_targets(source)
        self.mode = choose_mode(source, self.target, self.run)
        self.starting.emit()
        w = self.pool.take()
        self.worker = w
        w.progress.connect(self.progress)
        w.log.connect(self.log)
        w.steps.connect(self.steps)
        w.result.connect(self._result)
        w.error.connect(self._error)
        w.crashed.connect(self._crashed)
        w.finished.connect(lambda w=w: self._finished(w))
        w.done.connect(lambda w=w: self._finished(w))  # answered: the worker lives on as the session
        self.workerTaken.emit(w)
        if self.watching is not None:
            r = self.watching
            w.analyze(
                self.script,
                None,
                run=True,
                args=self.args,
                until=r.until,
                live=True,
                zero_steps=r.zero_steps,
                max_steps=r.max_steps,
            )
        elif self.mode == "program":
            w.analyze(self.script, None, run=True, args=self.args, step=self.step)
        else:
            w.analyze(self.script, self.target)

    def busy(self) -> bool:
        return self.worker is not None

    def cancel(self, quiet: bool = False) -> None:
        """Stop the run in progress, if any (``quiet``: a new one replaces it)."""
        w, self.worker = self.worker, None
        if w is None:
            return
        for sig in (w.progress, w.log, w.steps, w.result, w.error, w.crashed):
            sig.disconnect()
        w.kill()
        self.cancelled.emit(quiet)

    def _finished(self, w: Worker) -> None:
        if w is self.worker:
            self.worker = None
            self.ended.emit()

    def _result(self, data: Report | dict) -> None:
        self.result_at = time.perf_counter()
        try:
            report = data if isinstance(data, Report) else Report.from_dict(data)
        except Exception as exc:  # noqa: BLE001 - a malformed report is shown, not raised
            self._error({"message": f"could not read the analysis result: {exc}"})
            return
        self.report = report
        watch = report.watch if self.watching is not None else None
        if watch is not None and watch.step is not None:
            self.step = watch.step  # the bar names the step shown; its Run diagnoses it again
        self.mode = report.mode  # a default target stays unpinned: F5 after removing loss() runs the program
        self.reportReady.emit(report)

    def _error(self, err: dict) -> None:
        self.last_error = err
        self.failed.emit(err)

    def _crashed(self, err: dict) -> None:
        self.last_error = dict(err, detail=err.get("detail") or "(the process wrote nothing on stderr)")
        self.crashed.emit(self.last_error)
