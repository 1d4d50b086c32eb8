"""The main window: menus, docks, status bar, and the analysis lifecycle.

One analysis at a time. Each runs in a worker process taken from the pool
(warm when possible); Cancel kills it, a crash is reported with the worker's
exit status and faulthandler trace, and the window stays usable throughout.

What is analyzed: a named target (a zero-argument function), or the program
itself run to its N-th gradient computation with its command-line arguments
(program mode). The analysis bar offers both; which one a plain open gets is
read from the source (:func:`tfviz.script.scriptinfo.choose_mode`) without running it,
so the bar is right even when the analysis fails (a program that rejects its
arguments needs the Arguments field most).

A watched run (*Run until…*, ``tfviz check --until``) runs the program step after step,
its record drawn live in the Training dock, and diagnoses the first step where a gradient
goes wrong; F5 repeats whichever of the two was asked for last.
"""

from __future__ import annotations

import html
import os
import shlex
import time
from collections.abc import Callable

from PySide6.QtCore import QByteArray, QFileSystemWatcher, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from tfviz.report import Report
from tfviz.script.scriptinfo import choose_mode, static_targets

from .analysis_bar import AnalysisBar
from .banner import ErrorBanner
from .display import summary
from .graph.export.dialog import install_export_action
from .graph.panel import GraphPanel
from .jacobian import JacobianController
from .panels.docks import DetailsPanel, LogPanel, add_dock, add_overview_dock
from .panels.flow_chart import add_flow_dock
from .panels.problems import ProblemsPanel
from .panels.search import install_navigation
from .panels.source_view import SourceView
from .panels.stale import mark_stale
from .panels.tab_bars import keep_tab_bars_clean
from .panels.training import SHORTCUT, RunUntilDialog, WatchRequest, add_training_dock
from .panels.variables import VariablesPanel
from .recent import RecentFiles
from .run_choice import RunChoice
from .saved import SavedLoad, cancel_load, end_loads, install_save_action, is_saved_analysis, open_saved
from .selection import SelectionSync
from .start_page import StartPage
from .worker_client import Worker, WorkerPool

#: Bumped when the dock arrangement changes, so an old saved layout is not restored.
LAYOUT_VERSION = 4  # 3: the Overview dock below Details; 4: the Training dock


class MainWindow(RunChoice, RecentFiles, SelectionSync, QMainWindow):
    _sweep_tab_bars: Callable[[], None]  # set by keep_tab_bars_clean

    def __init__(self, pool: WorkerPool | None = None):
        super().__init__()
        self.setWindowTitle("tfviz")
        self.resize(1400, 900)
        self.settings = QSettings("tfviz", "tfviz")
        #: a pool handed in is the caller's (several windows may share its warm workers)
        self._own_pool = pool is None
        self.pool = pool or WorkerPool(self)
        self.report: Report | None = None
        self.script: str | None = None
        self.target: str | None = None  # the function asked for (None: loss, or the program)
        self.run = False  # the program was asked for explicitly ("First gradient step")
        self.args: list[str] = []
        self.step = 1
        self.mode = "target"  # what the current analysis is: "target" or "program"
        self.watching: WatchRequest | None = None  # a watched run was asked for last (Run until…)
        self.until_dialog: RunUntilDialog | None = None  # the last Run until… dialog
        self.named_targets: list[str] = []
        self.worker: Worker | None = None
        self.saved_load: SavedLoad | None = None  # a saved analysis being read (app.saved)
        self.last_error: dict | None = None
        self.result_at = 0.0
        self._build_ui()
        self._build_menus()
        self.jacobian = JacobianController(self)  # the Jacobian dock and its right-click entries
        self.flow = add_flow_dock(self)  # the gradient-flow chart
        self.search_panel = install_navigation(self)  # the Search dock and the graph's keys
        self.minimap = add_overview_dock(self)  # the graph's overview, below Details
        self.training = add_training_dock(self)  # a watched run's record, tabbed with Problems
        self.training.diagnoseRequested.connect(self.diagnose_step)
        self.training.runRequested.connect(self.ask_run_until)
        for d in self.docks.values():  # every dock, those added by the installers too
            self.view_menu.addAction(d.toggleViewAction())
        keep_tab_bars_clean(self)
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(self._file_changed)
        self._debounce = QTimer(self, singleShot=True, interval=500)
        self._debounce.timeout.connect(self.reload)
        self._restore()

    # -- UI -----------------------------------------------------------------------
    def _build_ui(self) -> None:
        self.banner = ErrorBanner()
        self.banner.targetChosen.connect(lambda t: self.open_script(self.script, t))
        self.bar = AnalysisBar(self)
        self.bar.choiceMade.connect(self._choice_made)
        self.bar.programChanged.connect(self._program_changed)
        self.bar.watchRequested.connect(self.ask_run_until)
        self.bar.hide()
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.bar)
        self.target_combo = self.bar.combo
        self.banner.locationClicked.connect(lambda f, ln: self.source.mark_line(ln, f))
        self.start = StartPage()
        self.start.openRequested.connect(lambda p: self.open_script(p))
        self.start.browseRequested.connect(self.browse)
        self.graph = GraphPanel()
        self.graph.view.nodeSelected.connect(self._node_selected)
        self.graph.view.pathRequested.connect(self.show_path)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.start)
        self.stack.addWidget(self.graph)
        central = QWidget()
        lay = QVBoxLayout(central)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.banner)
        lay.addWidget(self.stack, 1)
        self.setCentralWidget(central)

        self.variables = VariablesPanel()
        self.variables.variableSelected.connect(self._variable_selected)
        self.problems = ProblemsPanel()
        self.problems.problemActivated.connect(self.show_problem)
        self.source = SourceView()
        self.details = DetailsPanel()
        self.log = LogPanel()
        self.docks: dict[str, QDockWidget] = {}
        # Source and Details on the right, the two lists side by side at the bottom: every
        # column of the Variables list is visible and the graph keeps most of the window.
        for name, w, area in (("Source", self.source, Qt.DockWidgetArea.RightDockWidgetArea),
                              ("Details", self.details, Qt.DockWidgetArea.RightDockWidgetArea),
                              ("Variables", self.variables.box, Qt.DockWidgetArea.BottomDockWidgetArea),
                              ("Problems", self.problems, Qt.DockWidgetArea.BottomDockWidgetArea),
                              ("Log", self.log, Qt.DockWidgetArea.BottomDockWidgetArea)):
            add_dock(self, name, w, area)
        self.splitDockWidget(self.docks["Variables"], self.docks["Problems"], Qt.Orientation.Horizontal)
        self.tabifyDockWidget(self.docks["Problems"], self.docks["Log"])
        self.docks["Problems"].raise_()
        self._sized = False

        sb = self.statusBar()
        self.stage = QLabel("Ready")
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setMaximumWidth(220)
        self.progress.hide()
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setToolTip("Stop the analysis (Esc)")
        self.cancel_btn.clicked.connect(self.cancel)
        self.cancel_btn.hide()
        sb.addWidget(self.stage, 1)
        for w in (self.progress, self.cancel_btn):
            sb.addPermanentWidget(w)

    def showEvent(self, e) -> None:
        super().showEvent(e)
        if not self._sized:  # resizeDocks is ignored before the first layout, so wait for it
            self._sized = True
            QTimer.singleShot(0, self._default_dock_sizes)
        self._sweep_tab_bars()

    def _default_dock_sizes(self, force: bool = False) -> None:
        """First run (no saved layout): proportions that suit 1280–1920 px wide screens."""
        if self._restored and not force:
            return
        w, h = max(self.width(), 800), max(self.height(), 600)
        side = int(min(440, max(300, w * 0.27)))
        self.resizeDocks([self.docks["Source"]], [side], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["Variables"], self.docks["Problems"]],
                         [int(w * 0.42), int(w * 0.58)], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["Variables"]], [int(min(190, h * 0.22))], Qt.Orientation.Vertical)
        self.resizeDocks([self.docks["Source"], self.docks["Details"], self.docks["Overview"]],
                         [int(h * 0.36), int(h * 0.40), int(h * 0.24)], Qt.Orientation.Vertical)

    def _build_menus(self) -> None:
        def act(menu, text, slot, key=None, tip=""):
            a = QAction(text, self)
            if key:
                a.setShortcut(QKeySequence(key))
            a.setStatusTip(tip)
            a.triggered.connect(slot)
            menu.addAction(a)
            return a

        f = self.menuBar().addMenu("&File")
        act(f, "&Open…", self.browse, QKeySequence.StandardKey.Open)
        install_save_action(self, f)
        install_export_action(self, f)
        self.recent_menu = f.addMenu("Open &Recent")
        act(f, "&Start page", self.show_start)
        f.addSeparator()
        act(f, "&Quit", self.close, "Ctrl+Q")
        a = self.menuBar().addMenu("&Analysis")
        self.reload_action = act(a, "&Reload", self.reload, "F5", "Analyze the script again")
        self.cancel_action = act(a, "&Cancel", self.cancel, "Esc", "Stop the running analysis")
        self.run_until_action = act(a, "Run &until…", self.ask_run_until, SHORTCUT,
                                    "Run the program, watching every gradient step, until one goes wrong")
        a.addSeparator()
        act(a, "Choose &target…", self._focus_choice, "Ctrl+T",
            "Analyze the program's gradient step or one of the script's functions")
        act(a, "Program &arguments…", self._focus_args, "Ctrl+L", "Edit the program's command line")
        v = self.menuBar().addMenu("&View")
        act(v, "&Fit graph", self.graph.view.fit, "F")
        act(v, "&Find…", self.graph.focus_search, "Ctrl+F")
        act(v, "Find &next", self.graph.find_next, "F3")
        act(v, "Find &previous", self.graph.find_prev, "Shift+F3")
        v.addAction(self.graph.only_path.text(), self.graph.only_path.toggle)
        v.addAction(self.graph.magnitude.text(), self.graph.magnitude.toggle)
        v.addSeparator()
        self.view_menu: QMenu = v  # each dock's toggle is added once all docks exist (__init__)

    # -- settings -----------------------------------------------------------------
    def _restore(self) -> None:
        geo = self.settings.value("geometry")
        if isinstance(geo, QByteArray):
            self.restoreGeometry(geo)
        state = self.settings.value("state")
        self._restored = isinstance(state, QByteArray) and self.restoreState(state, LAYOUT_VERSION)
        self._refresh_recent()

    def closeEvent(self, e) -> None:
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("state", self.saveState(LAYOUT_VERSION))
        self.cancel(quiet=True)
        end_loads(self)
        self.jacobian.end_session()
        if self._own_pool:
            self.pool.shutdown()
        super().closeEvent(e)

    # -- analysis -----------------------------------------------------------------
    def browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open script", os.path.dirname(self.script or ""),
                                              "Python scripts and notebooks (*.py *.ipynb);;"
                                              "Saved analyses (*.json)")
        if path:
            self.open_script(path)

    def open_script(self, path: str | None, target: str | None = None, *, run: bool = False,
                    args: list[str] | None = None, step: int | None = None) -> None:
        """Analyze ``path``: the function ``target``, or (``run``, or a script without
        ``loss()``) the program with ``args`` (default: those remembered for this script)
        up to its ``step``-th gradient computation (default: 1 for a new script)."""
        if not path:
            return
        if is_saved_analysis(path):  # shown from the file alone, read on a thread: nothing runs
            open_saved(self, path)
            return
        path = os.path.abspath(path)
        new = path != self.script
        self.watching = None  # one step, as asked: not a watched run
        if new:
            if self.watcher.files():
                self.watcher.removePaths(self.watcher.files())
            self.watcher.addPath(path)
            self.report = None
            self._show_report(None)
            self.training.clear()
        self.script, self.target, self.run = path, target or None, bool(run) and not target
        if args is not None:
            self.args = list(args)
            self._remember_args(path, self.args)
        elif new:
            self.args = self.saved_args(path)
        if step is not None or new:
            self.step = max(1, int(step or 1))
        self.setWindowTitle(f"tfviz — {os.path.basename(path)}")
        self._add_recent(path)
        self.source.load(path)
        self.stack.setCurrentWidget(self.graph)
        self._start()

    def show_start(self) -> None:
        self.stack.setCurrentWidget(self.start)
        self.bar.hide()

    def reload(self) -> None:
        if self.script:
            if self.mode == "program" and not self._take_program_fields():
                return
            self.source.reload()
            self._start()

    def _file_changed(self, path: str) -> None:
        if os.path.exists(path) and path not in self.watcher.files():
            self.watcher.addPath(path)  # editors that replace the file drop the watch
        self._debounce.start()

    def _start(self) -> None:
        assert self.script is not None  # open_script and reload start only with a script open
        self.cancel(quiet=True)
        self.banner.hide()
        self.last_error = None
        source = self._read_script()
        self.named_targets = static_targets(source)
        self.mode = choose_mode(source, self.target, self.run)
        self._configure_bar()
        name = os.path.basename(self.script)
        if self.watching is not None:
            self.log.note(f"running {shlex.join([name, *self.args])}, watching every gradient step"
                          f" until {self.watching.words()}")
            self.training.begin(self.script, self.watching)  # a new record
        elif self.mode == "program":
            cmd = shlex.join([name, *self.args])
            what = "its first gradient step" if self.step == 1 else f"its gradient step {self.step}"
            self.log.note(f"running {cmd} to {what}")
        else:
            self.log.note(f"analyzing {name}, target {self.target or 'loss'}()")
        self.graph.view.set_placeholder(f"Running {name}, watching every gradient step…"
                                        if self.watching else f"Analyzing {name}…")
        w = self.pool.take()
        self.worker = w
        w.progress.connect(self._progress)
        w.log.connect(self.log.append_text)
        w.steps.connect(self._steps)
        w.result.connect(self._result)
        w.error.connect(self._error)
        w.crashed.connect(self._crashed)
        w.finished.connect(lambda w=w: self._finished(w))
        w.done.connect(lambda w=w: self._finished(w))  # answered: the worker lives on as the session
        self.jacobian.attach(w)
        self.stage.setText("starting TensorFlow…" if not w.is_ready else "analyzing…")
        self.progress.setValue(0)
        self.progress.show()
        self.cancel_btn.show()
        if self.watching is not None:
            r = self.watching
            w.analyze(self.script, None, run=True, args=self.args, until=r.until, live=True,
                      zero_steps=r.zero_steps, max_steps=r.max_steps)
        elif self.mode == "program":
            w.analyze(self.script, None, run=True, args=self.args, step=self.step)
        else:
            w.analyze(self.script, self.target)

    # -- watched runs (the Training dock) -------------------------------------------
    def ask_run_until(self) -> None:
        """Run until…: which conditions to watch for (a dialog), then the watched run."""
        if not self.script:
            self.stage.setText("Open a script first: Run until… watches its program as it trains")
            return
        dlg = self.until_dialog = RunUntilDialog(self.settings, self)
        dlg.accepted.connect(lambda: self.run_until(dlg.request()))
        dlg.finished.connect(dlg.deleteLater)
        dlg.open()  # not exec(): the window (and a run in progress) goes on meanwhile

    def run_until(self, request: WatchRequest) -> None:
        """Run the program with its arguments, watching every gradient step, and diagnose the
        first where one of ``request.until`` holds; the Training dock draws the steps live."""
        if not self.script or not request.until:
            return
        if self.bar.is_shown("args") and not self._take_program_fields():
            return  # an unclosed quote in the arguments: said in the status bar
        self.watching = request
        self.target, self.run = None, True
        dock = self.docks["Training"]
        dock.show()
        dock.raise_()
        if not dock.isFloating() and dock.height() < 300:  # two plots need the room
            self.resizeDocks([dock], [max(300, int(self.height() * 0.4))], Qt.Orientation.Vertical)
        self._start()

    def diagnose_step(self, step: int) -> None:
        """*Diagnose step N* from the Training dock: the program run to that gradient step and
        its graph shown, as the Step field would; the dock keeps the record it was picked from."""
        if self.script:
            self.open_script(self.script, None, run=True, args=self.args, step=step)
            self.training.mark_diagnosed(step)

    def _steps(self, points: list) -> None:
        self.training.add_points(points)
        rec = self.training.record
        if rec.n and self.stage.text().startswith("running the program"):  # not once it diagnoses
            last = int(rec.steps[-1])
            self.stage.setText(f"running the program, watching every gradient step: step {last:,}")
            if self.watching is not None and self.watching.max_steps:
                self.progress.setValue(int(100 * min(1.0, last / self.watching.max_steps)))

    def busy(self) -> bool:
        return self.worker is not None

    def cancel(self, quiet: bool = False) -> None:
        cancel_load(self)  # a saved analysis being opened: the window stays as it was
        w, self.worker = self.worker, None
        if w is None:
            return
        for sig in (w.progress, w.log, w.steps, w.result, w.error, w.crashed):
            sig.disconnect()
        w.kill()
        self.training.stop("stopped" if quiet else "cancelled")  # a watched run keeps its record
        if not quiet:
            self.log.note("cancelled")
            self.graph.view.set_placeholder("Cancelled. Press F5 to analyze the script again.")
        self._idle("Cancelled" if not quiet else "Ready")

    def _idle(self, text: str) -> None:
        self.stage.setText(text)
        self.stage.setToolTip("")
        self.progress.hide()
        self.cancel_btn.hide()

    def _finished(self, w: Worker) -> None:
        if w is self.worker:
            self.worker = None
            self.progress.hide()
            self.cancel_btn.hide()

    def _progress(self, stage: str, fraction: float) -> None:
        self.stage.setText(stage)
        self.progress.setValue(int(100 * fraction))

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
            self.log.note(f"{watch.fired} at gradient step {watch.step:,} ({watch.at}): {watch.detail}")
        self._show_report(report)
        self.mode = report.mode  # a default target stays unpinned: F5 after removing loss() runs the program
        self._configure_bar(report.targets)
        if watch is not None and watch.step is None:  # it trained to the end: no step to diagnose
            none = f"No {' or '.join(watch.until)} in {watch.steps:,} gradient steps"
            self.log.note(f"{none}: {watch.at}")
            said = f"{none}: nothing to diagnose. Click a step in the Training dock to diagnose it."
            self.graph.view.set_placeholder(said)
            for panel in (self.variables, self.problems):  # not "no variable", "no problem": no step
                panel.placeholder = said
                panel.viewport().update()
            self._idle(f"{none} — {watch.at}")
            return
        what = self.describe(report)
        if report.mode == "program":
            nth = "first gradient step" if self.step == 1 else f"gradient step {self.step}"
            self.log.note(f"diagnosed its {nth}: {report.target}")
        else:
            self.log.note(f"diagnosed {what}")
        self._idle(f"{what} — {summary(report)}")
        self.stage.setToolTip(self.stage.text())

    def _error(self, err: dict) -> None:
        self.last_error = err
        candidates, prompt, note = err.get("candidates") or [], "", ""
        if self.mode == "program":
            cmd = shlex.join([os.path.basename(self.script or ""), *self.args])
            note = (f"Command line: <code>{html.escape(cmd)}</code>{'' if self.args else ' (no arguments)'}"
                    " — edit the arguments above (Ctrl+L) and press Enter to run it again.")
            candidates = candidates or self.named_targets
            prompt = "Or differentiate one of its functions:" if candidates else ""
        self.banner.show_error(err.get("message") or "analysis failed", err.get("file"), err.get("line"),
                               err.get("code") or "", err.get("detail") or "", candidates,
                               base_dir=os.path.dirname(self.script or ""), prompt=prompt, note=note,
                               cell=str(err.get("cell_name") or ""), cell_line=err.get("cell_line"))
        if err.get("file") and err.get("line"):
            self.source.mark_line(int(err["line"]), err["file"], str(err.get("code") or ""))
        self.log.note(f"failed: {err.get('message') or 'analysis failed'}")
        self.training.stop("failed")
        mark_stale(self, True)  # the previous report, if any, stays greyed, not shown as current
        self.graph.view.set_placeholder("No graph: the analysis did not finish. The message above says why.")
        self._idle("Analysis failed")

    def _crashed(self, err: dict) -> None:
        """The worker ended without an answer: how, in words, with the faulthandler trace."""
        err = dict(err, detail=err.get("detail") or "(the process wrote nothing on stderr)")
        self._error(err)
        if self.mode != "program":  # a program's banner already says how to run it again
            self.banner.title.setText(self.banner.title.text() + "<br>Press F5 to run it again.")
        self._idle("The script's process ended")
