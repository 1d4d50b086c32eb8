"""Shared fixtures: offscreen Qt, throw-away settings, a fresh window per test module, and one
pool of warm workers for the session (each worker imports TensorFlow: seconds of CPU)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="tfviz-gui-settings-")

import pytest

#: GUI-test-only scripts (segfault, hang, raise) must never be imported by collection.
collect_ignore = ["scripts"]
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "examples"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
#: The machine may be busy (2 cores, TF tests in parallel): analyses get generous time.
ANALYSIS_TIMEOUT_MS = 150_000


@pytest.fixture(scope="session")
def worker_pool(qapp):
    from app.worker_client import WorkerPool

    pool = WorkerPool()
    yield pool
    pool.shutdown()


@pytest.fixture(scope="module")
def window(qapp, worker_pool):
    """A window of the module's own: no module sees what another left open, selected or
    expanded."""
    from app.window import MainWindow

    w = MainWindow(pool=worker_pool)
    w.resize(1400, 900)
    w.show()
    yield w
    w.close()
    w.deleteLater()


def run_analysis(qtbot, window, script: Path | str, target: str | None = None) -> None:
    """Open ``script`` and wait until the worker answered (result, error or crash)."""
    window.analysis.report = None
    window.analysis.last_error = None
    window.open_script(str(script), target)
    qtbot.waitUntil(lambda: not window.analysis.busy(), timeout=ANALYSIS_TIMEOUT_MS)


def drawn(view, timeout: float = 30.0) -> None:
    """Run the event loop until ``view``'s background rebuild (a toolbar's or a menu's
    change, :mod:`app.graph.building`) has drawn the graph."""
    import time

    from PySide6.QtWidgets import QApplication

    end = time.monotonic() + timeout
    while view.building():
        assert time.monotonic() < end, "the graph was not drawn"
        QApplication.processEvents()
        time.sleep(0.001)
