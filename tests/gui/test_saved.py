"""Saved analyses: a ``.json`` export opens in the window with its graph and panels,
without a worker, without TensorFlow, and a bad file changes nothing. It is read on a
thread with progress and Cancel, and the files it names are never read."""

from __future__ import annotations

import builtins
import io
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tests.bigdoc import big_document, big_json
from tests.gui.conftest import ROOT
from tfviz.analysisfile import load_analysis
from tfviz.report import Problem


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A real export, made in another process: the GUI tests' process never imports TensorFlow."""
    path = tmp_path_factory.mktemp("saved") / "bug.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfviz.cli",
            "export",
            str(ROOT / "resources" / "examples" / "kind_stop_gradient.py"),
            "-o",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    report = load_analysis(str(path))
    return path, report


@pytest.fixture
def fresh(qtbot):
    from app.window import MainWindow
    from app.worker_client import WorkerPool

    w = MainWindow(pool=WorkerPool(spare=False))
    qtbot.addWidget(w)
    w.show()
    return w


def _workers(w) -> list:
    from app.worker_client import Worker

    return w.pool.findChildren(Worker)


def _open(qtbot, w, path) -> None:
    """Open a saved analysis and wait until it is shown, refused or cancelled."""
    w.open_script(str(path))
    load = w.saved.current
    if load is not None:
        qtbot.waitUntil(lambda: not load.running(), timeout=60_000)


def test_saved_analysis_shows_graph_and_panels_without_a_worker(fresh, saved, qtbot):
    path, report = saved
    _open(qtbot, fresh, path)
    assert fresh.analysis.report is not None and fresh.analysis.report.problems == report.problems
    assert fresh.problems.topLevelItemCount() == len(report.problems) == 1
    assert fresh.variables.topLevelItemCount() == len(report.variables)
    view = fresh.graph.view
    assert view.hierarchy is not None and "var:teacher" in view.hierarchy.ops
    assert fresh.stack.currentWidget() is fresh.graph and not fresh.banner.isVisible()
    assert fresh.analysis.script is None and not fresh.analysis.busy() and _workers(fresh) == []
    assert "saved analysis" in fresh.windowTitle() and "bug.json" in fresh.stage.text()


def test_f5_on_a_saved_analysis_runs_its_script_or_says_why_not(fresh, saved, tmp_path, qtbot):
    path, report = saved
    # the script it was made from is not there: F5 says so, and nothing runs
    doc = json.loads(path.read_text())
    doc["script"] = str(tmp_path / "gone" / "train.py")
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(doc))
    _open(qtbot, fresh, moved)
    fresh.reload()
    assert not fresh.analysis.busy() and _workers(fresh) == []
    said = fresh.stage.text()
    assert "F5 runs the script again" in said and doc["script"] in said and "is not there" in said
    # it is there: F5 analyzes it again, as the analysis was made (its target)
    _open(qtbot, fresh, path)
    fresh.reload()
    assert fresh.analysis.script == report.script
    qtbot.waitUntil(lambda: fresh.analysis.report is not None and not fresh.analysis.busy(), timeout=300_000)
    again = fresh.analysis.report
    assert fresh.analysis.last_error is None and again.target == report.target
    assert [(p.kind, p.op) for p in again.problems] == [(p.kind, p.op) for p in report.problems]
    assert "saved analysis" not in fresh.windowTitle()


def test_a_saved_analysis_is_in_open_recent_and_reopens_from_there(fresh, saved, tmp_path, qtbot):
    path, report = saved
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    _open(qtbot, fresh, path)
    assert fresh.recent.files()[0] == os.path.abspath(path)
    first = fresh.recent.menu.actions()[0]
    assert "bug.json" in first.text()
    fresh.analysis.report = None
    fresh.show_report(None)
    first.trigger()  # reopened from the menu: shown again, nothing run
    qtbot.waitUntil(lambda: fresh.analysis.report is not None, timeout=60_000)
    assert fresh.analysis.report is not None and fresh.analysis.report.problems == report.problems
    assert _workers(fresh) == []
    from PySide6.QtWidgets import QMessageBox

    _open(qtbot, fresh, bad)
    for b in fresh.findChildren(QMessageBox):
        b.close()
    assert fresh.analysis.report.problems == report.problems
    assert os.path.abspath(bad) not in fresh.recent.files()  # a refused file is not offered again


def test_save_then_reopen_gives_the_same_problems(fresh, saved, tmp_path, qtbot):
    from app import saved as saved_mod

    path, report = saved
    _open(qtbot, fresh, path)
    out = tmp_path / "again.json"
    assert saved_mod.save(fresh.analysis.report, str(out)) is None
    again = load_analysis(out)
    assert [(p.kind, p.op, p.variables) for p in again.problems] == [
        (p.kind, p.op, p.variables) for p in report.problems
    ]
    assert again == fresh.analysis.report


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b'{"schema_version": 1, "script": 3}',
        b"[" * 100_000,
        json.dumps({"schema_version": 7}).encode(),
    ],
)
def test_bad_file_gets_a_message_and_nothing_else_happens(fresh, saved, tmp_path, content, qtbot):
    from PySide6.QtWidgets import QMessageBox

    path, report = saved
    _open(qtbot, fresh, path)
    title, shown = fresh.windowTitle(), fresh.analysis.report
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    load = fresh.saved.open(str(bad))
    qtbot.waitUntil(lambda: not load.running(), timeout=60_000)
    error = load.error
    assert load.outcome == "refused" and error and str(bad) in error
    boxes = [b for b in fresh.findChildren(QMessageBox) if b.isVisible()]
    assert boxes and str(bad) in boxes[-1].text()
    for b in boxes:
        b.close()
    assert fresh.analysis.report is shown and fresh.windowTitle() == title and _workers(fresh) == []


def test_hostile_source_paths_are_never_read(fresh, saved, tmp_path, qtbot):
    path, _ = saved
    doc = json.loads(path.read_text())
    for op in doc["graph"]["ops"]:
        if op.get("source"):
            op["source"]["file"] = "/dev/zero"  # reading it would never end
    bad = tmp_path / "zero.json"
    bad.write_text(json.dumps(doc))
    _open(qtbot, fresh, bad)
    assert fresh.analysis.report is not None
    op = next(o for o in fresh.analysis.report.graph.ops if o.source)
    assert op.source.file == "/dev/zero"  # shown as written, never read
    fresh.links.node_selected(op.id)  # the Source panel is asked for it: must return at once
    assert "not read from disk" in fresh.source.toPlainText()
    assert fresh.source.marked_text() == op.source.code


class _FileAccess:
    """Records every path opened or looked up (open, os.open, os.stat, os.path.exists…)."""

    def __init__(self, monkeypatch) -> None:
        self.paths: list[str] = []
        for mod, name in ((builtins, "open"), (io, "open"), (os, "open"), (os, "stat"), (os, "lstat")):
            real = getattr(mod, name)
            monkeypatch.setattr(mod, name, self._recording(real))

    def _recording(self, real):
        def call(path, *args, **kwargs):
            if isinstance(path, (str, bytes, os.PathLike)):
                self.paths.append(os.fsdecode(path))
            return real(path, *args, **kwargs)

        return call


def test_a_saved_analysis_never_makes_the_window_read_a_file_it_names(fresh, tmp_path, qtbot, monkeypatch):
    """An op's source pointing at /proc/kmsg froze the window when it was
    clicked (the read waits for the kernel); one pointing at any readable file showed it."""
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- TOPSECRET\n")
    doc = big_document(3)
    ops = [o for o in doc["graph"]["ops"] if o.get("source")]
    ops[0]["source"] = {"file": str(secret), "line": 1, "code": "w = tf.Variable(init)"}
    ops[1]["source"] = {"file": "/proc/kmsg", "line": 1, "code": "y = tf.matmul(x, w)"}
    doc["variables"][2]["source"] = {"file": str(secret), "line": 3, "code": "loss = f(y)"}
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    access = _FileAccess(monkeypatch)
    _open(qtbot, fresh, path)
    assert fresh.analysis.report is not None and fresh.saved.current is None
    fresh.links.node_selected(ops[0]["id"])
    text = fresh.source.toPlainText()
    assert "TOPSECRET" not in text and "w = tf.Variable(init)" in text and "loss = f(y)" in text
    assert fresh.source.marked_line == 1 and fresh.source.marked_text() == "w = tf.Variable(init)"
    t0 = time.perf_counter()
    fresh.links.node_selected(ops[1]["id"])
    assert time.perf_counter() - t0 < 5 and "y = tf.matmul(x, w)" in fresh.source.toPlainText()
    source = fresh.analysis.report.variables[2].source
    fresh.links.show_problem(Problem("nan", "error", "", "", "", source=source))
    assert "TOPSECRET" not in fresh.source.toPlainText()
    named = {str(secret), "/proc/kmsg"}
    assert not named & set(access.paths), [p for p in access.paths if p in named]


def test_the_script_the_user_opened_is_read_but_never_a_special_file(qtbot, tmp_path):
    """The one file the Source panel reads from disk: the user's own script, live; and that
    one is read without waiting, whatever it is."""
    from app.panels.source_view import SourceView

    view = SourceView()
    qtbot.addWidget(view)
    script = tmp_path / "train.py"
    script.write_text("import tensorflow as tf\nw = tf.Variable(1.0)\n")
    view.load(str(script))
    view.mark_line(2, str(script))
    assert view.marked_text() == "w = tf.Variable(1.0)"
    other = tmp_path / "notes.txt"
    other.write_text("TOPSECRET\n")
    view.mark_line(1, str(other), "x = 1")  # a file the report names, not the script: not read
    assert "TOPSECRET" not in view.toPlainText() and view.marked_text() == "x = 1"
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.py"
        os.mkfifo(fifo)
        t0 = time.perf_counter()
        view.load(str(fifo))  # opening a FIFO for reading waits for a writer, forever
        assert time.perf_counter() - t0 < 5 and "cannot read" in view.toPlainText()
    view.load("/proc/kmsg")
    assert "cannot read" in view.toPlainText()


def _held_load(monkeypatch, at: float = 0.5):
    """Make app.saved's loads stop at ``at`` of their progress until cancelled (or released),
    recording the thread each runs on."""
    import app.saved

    gate = threading.Event()
    threads: list[int] = []

    def held(path, *, progress, cancelled):
        threads.append(threading.get_ident())

        def hold(fraction: float, stage: str) -> None:
            progress(fraction, stage)
            while fraction >= at and not cancelled() and not gate.is_set():
                time.sleep(0.005)

        return load_analysis(path, progress=hold, cancelled=cancelled)

    monkeypatch.setattr(app.saved, "load_analysis", held)
    return gate, threads


def test_a_saved_analysis_loads_off_the_gui_thread_with_progress(fresh, tmp_path, qtbot, monkeypatch):
    """A 100 MB file used to take 400 s to check, the window frozen meanwhile.
    The load runs on another thread: the event loop keeps turning and the dialog shows
    how far it got."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QProgressDialog

    path = tmp_path / "big.json"
    path.write_bytes(big_json(20_000, graph_every=200))
    gate, threads = _held_load(monkeypatch)
    ticks = []
    timer = QTimer(interval=10)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    fresh.open_script(str(path))
    load = fresh.saved.current
    assert load is not None and load.running() and fresh.analysis.report is None
    dialog = load.dialog
    qtbot.waitUntil(lambda: dialog.value() >= 50 and dialog.isVisible(), timeout=30_000)
    n = len(ticks)
    qtbot.wait(200)
    assert len(ticks) >= n + 5 and load.running()  # the GUI thread turns while the load is held
    assert threads and threads[0] != threading.get_ident()
    assert isinstance(dialog, QProgressDialog) and "big.json" in dialog.labelText()
    assert "checking" in dialog.labelText() and fresh.stage.text() == "Opening big.json…"
    gate.set()
    qtbot.waitUntil(lambda: not load.running(), timeout=60_000)
    timer.stop()
    assert load.outcome == "shown" and len(fresh.analysis.report.variables) == 20_000
    assert not [d for d in fresh.findChildren(QProgressDialog) if d.isVisible()]
    assert "big.json" in fresh.windowTitle()


def test_cancel_stops_the_load_and_leaves_the_window_as_it_was(fresh, saved, tmp_path, qtbot, monkeypatch):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QProgressDialog, QPushButton

    from app.saved import _Reader

    path, _ = saved
    _open(qtbot, fresh, path)
    before = (
        fresh.analysis.report,
        fresh.windowTitle(),
        fresh.stage.text(),
        fresh.recent.files(),
        fresh.log.toPlainText(),
    )
    big = tmp_path / "big.json"
    big.write_bytes(big_json(20_000, graph_every=200))
    _, threads = _held_load(monkeypatch)
    fresh.open_script(str(big))
    load = fresh.saved.current
    qtbot.waitUntil(lambda: load.dialog.isVisible() and load.dialog.value() >= 50, timeout=30_000)
    (button,) = load.dialog.findChildren(QPushButton)
    qtbot.mouseClick(button, Qt.LeftButton)  # the dialog's Cancel
    assert load.outcome == "cancelled" and fresh.saved.current is None
    # the thread stops at its next check, and is deleted once it has
    qtbot.waitUntil(lambda: not fresh.findChildren(_Reader), timeout=5_000)
    qtbot.wait(100)  # nothing arrives late
    after = (
        fresh.analysis.report,
        fresh.windowTitle(),
        fresh.stage.text(),
        fresh.recent.files(),
        fresh.log.toPlainText(),
    )
    assert after == before and not [d for d in fresh.findChildren(QProgressDialog) if d.isVisible()]
    assert os.path.abspath(big) not in fresh.recent.files() and len(threads) == 1


def test_tfviz_saved_json_opens_without_tensorflow_or_worker(saved, tmp_path):
    """`tfviz bug.json`, in a fresh process: no TensorFlow import, no worker process."""
    path, _ = saved
    code = textwrap.dedent("""
        import json, sys, time
        from PySide6.QtWidgets import QApplication
        app = QApplication(sys.argv[:1])
        from app.main import make_window
        from app.worker_client import Worker
        w = make_window(sys.argv[1])
        deadline = time.time() + 60
        while w.analysis.report is None and time.time() < deadline:  # read on a thread
            app.processEvents()
            time.sleep(0.01)
        print(json.dumps({"tf": "tensorflow" in sys.modules, "workers": len(w.pool.findChildren(Worker)),
                          "problems": w.problems.topLevelItemCount(),
                          "ops": len(w.analysis.report.graph.ops)}))
        w.close()
    """)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path))
    r = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["tf"] is False and out["workers"] == 0 and out["problems"] == 1 and out["ops"] > 5


def test_the_source_opens_on_the_first_problem_and_a_problem_at_no_op_selects_its_variable(
    fresh, saved, tmp_path, qtbot
):
    from dataclasses import replace

    from app import saved as saved_mod
    from app.panels.problems import NO_OP

    _path, report = saved
    first = report.problems[0]
    assert first.source is not None
    about = report.variables[-1].name
    odd = Problem("other", "warning", "", "", "judged differently eagerly", variables=[about])
    doc = tmp_path / "no_op.json"
    assert saved_mod.save(replace(report, problems=[*report.problems, odd]), str(doc)) is None
    _open(qtbot, fresh, doc)
    # opened on the first problem's line, not at the top of the file
    assert fresh.source.marked_line == first.source.line
    assert first.source.code.strip() in fresh.source.marked_text()
    rows = [fresh.problems.topLevelItem(i) for i in range(fresh.problems.topLevelItemCount())]
    assert rows[-1].text(1) == NO_OP and about in rows[-1].toolTip(1)  # never a ditto of the row above
    fresh.problems.itemClicked.emit(rows[-1], 0)
    assert fresh.variables.current_variable() is not None
    assert fresh.variables.current_variable().name == about
