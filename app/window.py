"""The main window: menus, docks, status bar; it shows what the analysis controller says.

One analysis at a time (:class:`app.analysis.AnalysisController` owns it: what is asked,
the worker, the report, the error). The window lays out the panels and features, each
made with what it needs and docked here; it turns the controller's signals into what the
panels and the status bar show, and the controller never touches a widget. A crash or a
hang in the user's script kills only its worker; the window stays usable throughout.

A watched run (*Run until…*, ``tfviz check --until``) runs the program step after step,
its record drawn live in the Training dock, and diagnoses the first step where a gradient
goes wrong; F5 repeats whichever of the two was asked for last.
"""

from __future__ import annotations

import html
import os
import shlex

from PySide6.QtCore import QByteArray, QFileSystemWatcher, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence, QShortcut
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

from .analysis import AnalysisController
from .analysis_bar import AnalysisBar
from .banner import ErrorBanner
from .display import summary
from .graph.export.dialog import ImageExport
from .graph.minimap import Minimap
from .graph.panel import GraphPanel
from .jacobian import JacobianController
from .panels.docks import DetailsPanel, LogPanel
from .panels.flow_chart import FlowChart
from .panels.problems import ProblemsPanel
from .panels.search import GraphKeys, SearchPanel
from .panels.source_view import SourceView
from .panels.stale import StaleMarker
from .panels.tab_bars import keep_tab_bars_clean
from .panels.training import SHORTCUT, RunUntilDialog, TrainingPanel, WatchRequest
from .panels.variables import VariablesPanel
from .recent import RecentFiles
from .run_choice import RunChoice
from .saved import SaveAnalysis, SavedLoader, is_saved_analysis
from .selection import SelectionSync
from .start_page import StartPage
from .worker_client import Worker, WorkerPool

#: Bumped when the dock arrangement changes, so an old saved layout is not restored.
LAYOUT_VERSION = 4  # 3: the Overview dock below Details; 4: the Training dock

RIGHT, BOTTOM = Qt.DockWidgetArea.RightDockWidgetArea, Qt.DockWidgetArea.BottomDockWidgetArea


class MainWindow(QMainWindow):
    def __init__(self, pool: WorkerPool | None = None):
        super().__init__()
        self.setWindowTitle("tfviz")
        self.resize(1400, 900)
        self.settings = QSettings("tfviz", "tfviz")
        #: a pool handed in is the caller's (several windows may share its warm workers)
        self._own_pool = pool is None
        self.pool = pool or WorkerPool(self)
        self.analysis = AnalysisController(self.pool, self.settings, self)
        self.until_dialog: RunUntilDialog | None = None  # the last Run until… dialog
        self.docks: dict[str, QDockWidget] = {}
        self._build_ui()
        self._build_features()
        self._build_menus()
        for d in self.docks.values():  # every dock
            self.view_menu.addAction(d.toggleViewAction())
        self._sweep_tab_bars = keep_tab_bars_clean(self)
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(self._file_changed)
        self._debounce = QTimer(self, singleShot=True, interval=500)
        self._debounce.timeout.connect(self.reload)
        self._follow_analysis()
        self._restore()

    # -- UI -----------------------------------------------------------------------
    def add_dock(
        self, name: str, widget: QWidget, area: Qt.DockWidgetArea, beside: str | None = None
    ) -> QDockWidget:
        """A dock named ``name`` (its state saved under ``dock_<name>``), registered in
        ``docks`` and, with ``beside``, tabbed with that dock."""
        d = QDockWidget(name, self)
        d.setObjectName(f"dock_{name}")
        d.setWidget(widget)
        self.addDockWidget(area, d)
        if beside is not None:
            self.tabifyDockWidget(self.docks[beside], d)
        self.docks[name] = d
        return d

    def _build_ui(self) -> None:
        self.banner = ErrorBanner()
        self.banner.targetChosen.connect(lambda t: self.open_script(self.analysis.script, t))
        self.bar = AnalysisBar(self)
        self.bar.watchRequested.connect(self.ask_run_until)
        self.bar.hide()
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.bar)
        self.target_combo = self.bar.combo
        self.banner.locationClicked.connect(self._show_location)
        self.start = StartPage()
        self.start.openRequested.connect(lambda p: self.open_script(p))
        self.start.browseRequested.connect(self.browse)
        self.graph = GraphPanel()
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
        self.problems = ProblemsPanel()
        self.source = SourceView()
        self.details = DetailsPanel()
        self.log = LogPanel()
        # Source and Details on the right, the two lists side by side at the bottom: every
        # column of the Variables list is visible and the graph keeps most of the window.
        for name, w, area in (
            ("Source", self.source, RIGHT),
            ("Details", self.details, RIGHT),
            ("Variables", self.variables.box, BOTTOM),
            ("Problems", self.problems, BOTTOM),
            ("Log", self.log, BOTTOM),
        ):
            self.add_dock(name, w, area)
        self.splitDockWidget(self.docks["Variables"], self.docks["Problems"], Qt.Orientation.Horizontal)
        self.tabifyDockWidget(self.docks["Problems"], self.docks["Log"])
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

    def _show_location(self, file: str, line: int) -> None:
        self.source.mark_line(line, file)

    def _build_features(self) -> None:
        """The panels that follow the analysis, each given what it needs and docked here."""
        a, view = self.analysis, self.graph.view
        self.jacobian = JacobianController(a, view, self.variables, self)  # the kept session's Jacobians
        self.add_dock("Jacobian", self.jacobian.panel, BOTTOM, beside="Log")
        self.jacobian.shown.connect(self._show_jacobian)
        self.flow = FlowChart()  # the gradient-flow chart
        self.add_dock("Gradient flow", self.flow, BOTTOM, beside="Problems")
        self.search_panel = SearchPanel(a, view, self.variables)
        search = self.add_dock("Search", self.search_panel, RIGHT, beside="Details")
        self.variables.reportSet.connect(self.search_panel.refresh)
        QShortcut(QKeySequence("Ctrl+Shift+F"), self, lambda: self._focus_search(search))
        self.graph_keys = GraphKeys(view)  # arrows, +/-, Enter and Backspace on the graph
        self.minimap = Minimap(view)  # the graph's overview, below Details
        self.add_dock("Overview", self.minimap, RIGHT)
        self.training = TrainingPanel()  # a watched run's record, tabbed with Problems
        self.add_dock("Training", self.training, BOTTOM, beside="Problems")
        self.training.diagnoseRequested.connect(self.diagnose_step)
        self.training.runRequested.connect(self.ask_run_until)
        for shown in ("Details", "Problems"):
            self.docks[shown].raise_()
        self.links = SelectionSync(
            a, self.graph, self.variables, self.problems, self.flow, self.details, self.source, self.training
        )
        self.staleness = StaleMarker([view, self.variables.box, self.problems, self.flow], self.banner)
        self.saved = SavedLoader(self, self.stage, self._show_saved)
        self.save_analysis = SaveAnalysis(a, self, self.stage.setText)
        self.image_export = ImageExport(
            view, self, self.stage.setText, lambda: os.path.dirname(a.script or "")
        )

    def _focus_search(self, dock: QDockWidget) -> None:
        dock.show()
        dock.raise_()
        self.search_panel.field.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search_panel.field.selectAll()

    def showEvent(self, e) -> None:  # noqa: N802 - Qt's name
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
        self.resizeDocks(
            [self.docks["Variables"], self.docks["Problems"]],
            [int(w * 0.42), int(w * 0.58)],
            Qt.Orientation.Horizontal,
        )
        self.resizeDocks([self.docks["Variables"]], [int(min(190, h * 0.22))], Qt.Orientation.Vertical)
        self.resizeDocks(
            [self.docks["Source"], self.docks["Details"], self.docks["Overview"]],
            [int(h * 0.36), int(h * 0.40), int(h * 0.24)],
            Qt.Orientation.Vertical,
        )

    def _show_jacobian(self) -> None:
        """The Jacobian dock in front, with room for heatmaps: 45% of the height, and most
        of the width beside Variables."""
        dock = self.docks["Jacobian"]
        dock.show()
        dock.raise_()
        if dock.height() < self.height() * 0.35:
            self.resizeDocks([dock], [int(self.height() * 0.45)], Qt.Orientation.Vertical)
            variables = self.docks["Variables"]
            if variables.isVisible() and not variables.isFloating():
                self.resizeDocks(
                    [variables, dock],
                    [int(self.width() * 0.3), int(self.width() * 0.7)],
                    Qt.Orientation.Horizontal,
                )

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
        f.addAction(self.save_analysis.action)
        f.addAction(self.image_export.action)
        f.aboutToShow.connect(self.save_analysis.follow)
        f.aboutToShow.connect(self.image_export.follow)
        self.recent = RecentFiles(self.settings, f.addMenu("Open &Recent"), self.start, self.open_script)
        act(f, "&Start page", self.show_start)
        f.addSeparator()
        act(f, "&Quit", self.close, "Ctrl+Q")
        a = self.menuBar().addMenu("&Analysis")
        self.reload_action = act(a, "&Reload", self.reload, "F5", "Analyze the script again")
        self.cancel_action = act(a, "&Cancel", self.cancel, "Esc", "Stop the running analysis")
        self.run_until_action = act(
            a,
            "Run &until…",
            self.ask_run_until,
            SHORTCUT,
            "Run the program, watching every gradient step, until one goes wrong",
        )
        a.addSeparator()
        self.choice = RunChoice(self.bar, self.analysis, self.stage.setText, self)
        act(
            a,
            "Choose &target…",
            self.choice.focus_choice,
            "Ctrl+T",
            "Analyze the program's gradient step or one of the script's functions",
        )
        act(a, "Program &arguments…", self.choice.focus_args, "Ctrl+L", "Edit the program's command line")
        v = self.menuBar().addMenu("&View")
        act(v, "&Fit graph", self.graph.view.fit, "F")
        act(v, "&Find…", self.graph.focus_search, "Ctrl+F")
        act(v, "Find &next", self.graph.find_next, "F3")
        act(v, "Find &previous", self.graph.find_prev, "Shift+F3")
        v.addAction(self.graph.only_path.text(), self.graph.only_path.toggle)
        v.addAction(self.graph.magnitude.text(), self.graph.magnitude.toggle)
        v.addSeparator()
        self.view_menu: QMenu = v  # each dock's toggle is added once all docks exist (__init__)

    def _follow_analysis(self) -> None:
        a = self.analysis
        a.scriptOpened.connect(self._script_opened)
        a.starting.connect(self._starting)
        a.workerTaken.connect(self._worker_taken)
        a.progress.connect(self._progress)
        a.log.connect(self.log.append_text)
        a.steps.connect(self._steps)
        a.reportReady.connect(self._show_result)
        a.failed.connect(self._show_error)
        a.crashed.connect(self._show_crash)
        a.cancelled.connect(self._cancelled)
        a.ended.connect(self._ended)

    # -- settings -----------------------------------------------------------------
    def _restore(self) -> None:
        geo = self.settings.value("geometry")
        if isinstance(geo, QByteArray):
            self.restoreGeometry(geo)
        state = self.settings.value("state")
        self._restored = isinstance(state, QByteArray) and self.restoreState(state, LAYOUT_VERSION)

    def closeEvent(self, e) -> None:  # noqa: N802 - Qt's name
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("state", self.saveState(LAYOUT_VERSION))
        self.cancel(quiet=True)
        self.saved.end()
        self.jacobian.end_session()
        if self._own_pool:
            self.pool.shutdown()
        super().closeEvent(e)

    # -- opening ------------------------------------------------------------------
    def browse(self) -> None:
        start = os.path.dirname(self.analysis.script or "")
        path, _ = QFileDialog.getOpenFileName(
            self, "Open script", start, "Python scripts and notebooks (*.py *.ipynb);;Saved analyses (*.json)"
        )
        if path:
            self.open_script(path)

    def open_script(
        self,
        path: str | None,
        target: str | None = None,
        *,
        run: bool = False,
        args: list[str] | None = None,
        step: int | None = None,
    ) -> None:
        """Open ``path``: a saved analysis is shown from the file alone (read on a thread;
        nothing runs), a script is analyzed (:meth:`AnalysisController.open`)."""
        if not path:
            return
        if is_saved_analysis(path):
            self.saved.open(path)
            return
        self.analysis.open(path, target, run=run, args=args, step=step)

    def _script_opened(self, path: str, new: bool) -> None:
        if new:
            if self.watcher.files():
                self.watcher.removePaths(self.watcher.files())
            self.watcher.addPath(path)
            self.show_report(None)
            self.training.clear()
            # the new script's problems in front, not the emptied record of a run until…
            # (a run until… of this script raises Training again as it starts)
            self.docks["Problems"].raise_()
        self.setWindowTitle(f"tfviz — {os.path.basename(path)}")
        self.recent.add(path)
        self.source.load(path)
        self.stack.setCurrentWidget(self.graph)

    def show_start(self) -> None:
        self.stack.setCurrentWidget(self.start)
        self.bar.hide()

    def reload(self) -> None:
        """F5: analyze the script again. A saved analysis has no script of its own: its
        script, where it is still there, is run (as the analysis was made: its target, or
        as a program); where it is not, the status bar says so."""
        a = self.analysis
        if a.script:
            if a.mode == "program" and not self.choice.take_program_fields():
                return
            self.source.reload()
            a.reload()
            return
        report = a.report
        if report is None or not report.script:
            return
        if not os.path.isfile(report.script):
            self.stage.setText(
                f"F5 runs the script again, but {report.script}, which this analysis was made from,"
                " is not there: open the script with Ctrl+O"
            )
            return
        program = report.mode == "program"
        self.open_script(report.script, None if program else report.target, run=program)

    def _file_changed(self, path: str) -> None:
        if os.path.exists(path) and path not in self.watcher.files():
            self.watcher.addPath(path)  # editors that replace the file drop the watch
        self._debounce.start()

    def show_report(self, report: Report | None) -> None:
        """``report`` in every panel, drawn as current."""
        self.staleness.mark(report, False)
        self.links.show_report(report)

    def _show_saved(self, path: str, report: Report) -> str | None:
        """Show a checked saved analysis instead of the script; why it could not, or None."""
        old = self.analysis.report
        try:
            self.show_report(report)
        except Exception as exc:  # noqa: BLE001 - a file the checks let through must not break the window
            self.show_report(old)
            return f"{path} could not be shown: {exc}"
        self.analysis.show_saved(report)  # cancels what ran: F5 and file watching have nothing to run
        if self.watcher.files():
            self.watcher.removePaths(self.watcher.files())
        self.source.forget_script()  # from now on no file is read into the Source panel
        self.jacobian.forget_session()  # its session belongs to the script shown before
        self.links.source_on_first_problem(report)  # the panel was emptied with the script
        self.banner.hide()
        self.bar.hide()
        self.stack.setCurrentWidget(self.graph)
        name = os.path.basename(path)
        self.setWindowTitle(f"tfviz — {name} (saved analysis)")
        made = f"tfviz {report.tfviz or '?'}, TensorFlow {report.tensorflow or '?'}"
        self.log.note(
            f"opened the saved analysis {path}: {report.script}, {report.target} ({made}); nothing was run"
        )
        self._idle(f"Saved analysis {name} — {summary(report)}")
        self.stage.setToolTip(f"{report.script}\n{report.target}")
        self.recent.add(os.path.abspath(path))
        return None

    # -- a run --------------------------------------------------------------------
    def _starting(self) -> None:
        a = self.analysis
        self.saved.cancel()  # a saved analysis being opened: the script's run replaces it
        self.banner.hide()
        self.log.note(a.what_runs())
        name = os.path.basename(a.script or "")
        if a.watching is not None and a.script is not None:
            self.training.begin(a.script, a.watching)  # a new record
        self.graph.view.set_placeholder(
            f"Running {name}, watching every gradient step…" if a.watching else f"Analyzing {name}…"
        )

    def _worker_taken(self, w: Worker) -> None:
        self.stage.setText("starting TensorFlow…" if not w.is_ready else "analyzing…")
        self.progress.setValue(0)
        self.progress.show()
        self.cancel_btn.show()

    # -- watched runs (the Training dock) -------------------------------------------
    def ask_run_until(self) -> None:
        """Run until…: which conditions to watch for (a dialog), then the watched run."""
        if not self.analysis.script:
            self.stage.setText("Open a script first: Run until… watches its program as it trains")
            return
        dlg = self.until_dialog = RunUntilDialog(self.settings, self)
        dlg.accepted.connect(lambda: self.run_until(dlg.request()))
        dlg.finished.connect(dlg.deleteLater)
        dlg.open()  # not exec(): the window (and a run in progress) goes on meanwhile

    def run_until(self, request: WatchRequest) -> None:
        """Run the program with its arguments, watching every gradient step, and diagnose the
        first where one of ``request.until`` holds; the Training dock draws the steps live."""
        if not self.analysis.script or not request.until:
            return
        if self.bar.is_shown("args") and not self.choice.take_program_fields():
            return  # an unclosed quote in the arguments: said in the status bar
        dock = self.docks["Training"]
        dock.show()
        dock.raise_()
        if not dock.isFloating() and dock.height() < 300:  # two plots need the room
            self.resizeDocks([dock], [max(300, int(self.height() * 0.4))], Qt.Orientation.Vertical)
        self.analysis.watch(request)

    def diagnose_step(self, step: int) -> None:
        """*Diagnose step N* from the Training dock: the program run to that gradient step and
        its graph shown, as the Step field would; the dock keeps the record it was picked from."""
        a = self.analysis
        if a.script:
            a.open(a.script, None, run=True, args=a.args, step=step)
            self.training.mark_diagnosed(step)

    def _steps(self, points: list) -> None:
        self.training.add_points(points)
        rec = self.training.record
        if rec.n and self.stage.text().startswith("running the program"):  # not once it diagnoses
            last = int(rec.steps[-1])
            self.stage.setText(f"running the program, watching every gradient step: step {last:,}")
            watching = self.analysis.watching
            if watching is not None and watching.max_steps:
                self.progress.setValue(int(100 * min(1.0, last / watching.max_steps)))

    # -- the end of a run -----------------------------------------------------------
    def cancel(self, quiet: bool = False) -> None:
        """Stop what runs: a saved analysis being opened (the window stays as it was), or the
        analysis (``quiet``: a new one replaces it, nothing is said)."""
        self.saved.cancel()
        self.analysis.cancel(quiet)

    def _cancelled(self, quiet: bool) -> None:
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

    def _ended(self) -> None:
        self.progress.hide()
        self.cancel_btn.hide()

    def _progress(self, stage: str, fraction: float) -> None:
        self.stage.setText(stage)
        self.progress.setValue(int(100 * fraction))

    def _show_result(self, report: Report) -> None:
        a = self.analysis
        watch = report.watch if a.watching is not None else None
        if watch is not None and watch.step is not None:
            self.log.note(f"{watch.fired} at gradient step {watch.step:,} ({watch.at}): {watch.detail}")
        self.show_report(report)
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
        what = a.describe(report)
        if report.mode == "program":
            nth = "first gradient step" if a.step == 1 else f"gradient step {a.step}"
            self.log.note(f"diagnosed its {nth}: {report.target}")
        else:
            self.log.note(f"diagnosed {what}")
        for note in report.notes:  # what the text report says as "note:" (a second-order step, a cell)
            self.log.note(note)
        n = len(report.notes)
        noted = f" · {n} note{'s' * (n != 1)} in the Log" if n else ""
        self._idle(f"{what} — {summary(report)}{noted}")
        self.stage.setToolTip(self.stage.text())

    def _show_error(self, err: dict) -> None:
        a = self.analysis
        candidates, prompt, note = err.get("candidates") or [], "", ""
        if a.mode == "program":
            cmd = shlex.join([os.path.basename(a.script or ""), *a.args])
            note = (
                f"Command line: <code>{html.escape(cmd)}</code>{'' if a.args else ' (no arguments)'}"
                " — edit the arguments above (Ctrl+L) and press Enter to run it again."
            )
            candidates = candidates or a.named_targets
            prompt = "Or differentiate one of its functions:" if candidates else ""
        self.banner.show_error(
            err.get("message") or "analysis failed",
            err.get("file"),
            err.get("line"),
            err.get("code") or "",
            err.get("detail") or "",
            candidates,
            base_dir=os.path.dirname(a.script or ""),
            prompt=prompt,
            note=note,
            cell=str(err.get("cell_name") or ""),
            cell_line=err.get("cell_line"),
        )
        if err.get("file") and err.get("line"):
            self.source.mark_line(int(err["line"]), err["file"], str(err.get("code") or ""))
        self.log.note(f"failed: {err.get('message') or 'analysis failed'}")
        self.training.stop("failed")
        self.staleness.mark(a.report, True)  # the previous report, if any, stays greyed, not shown as current
        self.graph.view.set_placeholder("No graph: the analysis did not finish. The message above says why.")
        self._idle("Analysis failed")

    def _show_crash(self, err: dict) -> None:
        """The worker ended without an answer: how, in words, with the faulthandler trace."""
        self._show_error(err)
        if self.analysis.mode != "program":  # a program's banner already says how to run it again
            self.banner.title.setText(self.banner.title.text() + "<br>Press F5 to run it again.")
        self._idle("The script's process ended")
