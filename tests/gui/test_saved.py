"""Saved analyses (issue 10, item 4): a ``.json`` export opens in the window with its graph
and panels, without a worker, without TensorFlow, and a bad file changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.gui.conftest import ROOT
from tfviz.analysisfile import load_analysis


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A real export, made in another process: the GUI tests' process never imports TensorFlow."""
    path = tmp_path_factory.mktemp("saved") / "bug.json"
    done = subprocess.run([sys.executable, "-m", "tfviz.cli", "export",
                           str(ROOT / "resources" / "examples" / "kind_stop_gradient.py"), "-o", str(path)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
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


def test_saved_analysis_shows_graph_and_panels_without_a_worker(fresh, saved, qtbot):
    path, report = saved
    fresh.open_script(str(path))
    assert fresh.report is not None and fresh.report.problems == report.problems
    assert fresh.problems.topLevelItemCount() == len(report.problems) == 1
    assert fresh.variables.topLevelItemCount() == len(report.variables)
    view = fresh.graph.view
    assert view.h is not None and "var:teacher" in view.h.ops
    assert fresh.stack.currentWidget() is fresh.graph and not fresh.banner.isVisible()
    assert fresh.script is None and not fresh.busy() and _workers(fresh) == []
    assert "saved analysis" in fresh.windowTitle() and "bug.json" in fresh.stage.text()
    fresh.reload()  # F5 has no script to run
    assert not fresh.busy() and _workers(fresh) == []


def test_a_saved_analysis_is_in_open_recent_and_reopens_from_there(fresh, saved, tmp_path):
    path, report = saved
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    fresh.open_script(str(path))
    assert fresh.recent_files()[0] == os.path.abspath(path)
    first = fresh.recent_menu.actions()[0]
    assert "bug.json" in first.text()
    fresh.report = None
    fresh._show_report(None)
    first.trigger()  # reopened from the menu: shown again, nothing run
    assert fresh.report is not None and fresh.report.problems == report.problems
    assert _workers(fresh) == []
    from PySide6.QtWidgets import QMessageBox

    fresh.open_script(str(bad))
    for b in fresh.findChildren(QMessageBox):
        b.close()
    assert fresh.report.problems == report.problems
    assert os.path.abspath(bad) not in fresh.recent_files()  # a refused file is not offered again


def test_save_then_reopen_gives_the_same_problems(fresh, saved, tmp_path):
    from app import saved as saved_mod

    path, report = saved
    fresh.open_script(str(path))
    out = tmp_path / "again.json"
    assert saved_mod.save(fresh.report, str(out)) is None
    again = load_analysis(out)
    assert [(p.kind, p.op, p.variables) for p in again.problems] == \
        [(p.kind, p.op, p.variables) for p in report.problems]
    assert again == fresh.report


@pytest.mark.parametrize("content", [b"{not json", b'{"schema_version": 1, "script": 3}',
                                     b"[" * 100_000, json.dumps({"schema_version": 7}).encode()])
def test_bad_file_gets_a_message_and_nothing_else_happens(fresh, saved, tmp_path, content, qtbot):
    from PySide6.QtWidgets import QMessageBox

    from app.saved import open_saved

    path, report = saved
    fresh.open_script(str(path))
    title, shown = fresh.windowTitle(), fresh.report
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    error = open_saved(fresh, str(bad))
    assert error and str(bad) in error
    boxes = [b for b in fresh.findChildren(QMessageBox) if b.isVisible()]
    assert boxes and str(bad) in boxes[-1].text()
    for b in boxes:
        b.close()
    assert fresh.report is shown and fresh.windowTitle() == title and _workers(fresh) == []


def test_hostile_source_paths_are_never_read(fresh, saved, tmp_path):
    path, _ = saved
    doc = json.loads(path.read_text())
    for op in doc["graph"]["ops"]:
        if op.get("source"):
            op["source"]["file"] = "/dev/zero"  # reading it would never end
    bad = tmp_path / "zero.json"
    bad.write_text(json.dumps(doc))
    assert fresh.open_script(str(bad)) is None and fresh.report is not None
    op = next(o for o in fresh.report.graph.ops if o.source)
    assert "not read" in op.source.file
    fresh._node_selected(op.id)  # the Source panel is asked for it: must return at once


def test_tfviz_saved_json_opens_without_tensorflow_or_worker(saved, tmp_path):
    """`tfviz bug.json`, in a fresh process: no TensorFlow import, no worker process."""
    path, _ = saved
    code = textwrap.dedent("""
        import json, sys
        from PySide6.QtWidgets import QApplication
        app = QApplication(sys.argv[:1])
        from app.main import make_window
        from app.worker_client import Worker
        w = make_window(sys.argv[1])
        for _ in range(20):
            app.processEvents()
        print(json.dumps({"tf": "tensorflow" in sys.modules, "workers": len(w.pool.findChildren(Worker)),
                          "problems": w.problems.topLevelItemCount(), "ops": len(w.report.graph.ops)}))
        w.close()
    """)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["tf"] is False and out["workers"] == 0 and out["problems"] == 1 and out["ops"] > 5
