"""Process-level guarantees: no TensorFlow in the GUI, fast start, PySide6 refcount smoke test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from conftest import ROOT


def test_gui_process_never_imports_tensorflow():
    """A whole analysis through the window, in a fresh process (the test runner
    itself imports TensorFlow for the library tests): the GUI stays TF-free."""
    code = textwrap.dedent("""
        import os, pkgutil, importlib, sys
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6.QtCore import QElapsedTimer
        from PySide6.QtWidgets import QApplication
        import app
        for m in pkgutil.iter_modules(app.__path__):
            importlib.import_module(f"app.{m.name}")
        qapp = QApplication([])
        from app.window import MainWindow
        w = MainWindow(); w.show()
        w.open_script(sys.argv[1], None)
        timer = QElapsedTimer(); timer.start()
        while w.analysis.busy() and timer.elapsed() < 150_000:
            qapp.processEvents()
        assert w.analysis.report is not None, w.analysis.last_error
        print(len(w.analysis.report.variables), "tensorflow" in sys.modules,
              any(k.startswith(("tfviz.analysis.diagnose", "tfviz.engine.trace")) for k in sys.modules))
        w.close()
    """)
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "resources/examples/kind_integer.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["2", "False", "False"]


def test_window_opens_without_tensorflow():
    code = textwrap.dedent("""
        import os, sys
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6.QtWidgets import QApplication
        app = QApplication([])
        from app.window import MainWindow
        from app.worker_client import WorkerPool
        w = MainWindow(WorkerPool(spare=False)); w.show(); app.processEvents()
        assert "tensorflow" not in sys.modules
        n = w.start.examples.count()
        w.close()
        print(n)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) >= 1  # the start page lists the bundled examples


def test_many_none_returning_qt_calls_do_not_crash():
    """PySide6 6.12.0 on Python 3.11 corrupts None's refcount; ~1e5 such calls would abort."""
    code = textwrap.dedent("""
        from PySide6.QtGui import QPainterPath
        p = QPainterPath()
        for i in range(100_000):
            p.moveTo(i, i)
        print("survived", p.elementCount())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "survived" in out.stdout


def test_without_a_display_the_app_says_so_instead_of_aborting():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out = subprocess.run(
        [sys.executable, "-m", "app.launch", "some_script.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "no display" in out.stderr and "tfviz check some_script.py" in out.stderr
