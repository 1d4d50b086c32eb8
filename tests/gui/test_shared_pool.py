"""Windows may share one pool of warm workers: closing a window ends only a pool it made."""

from __future__ import annotations


def test_closing_a_window_leaves_the_pool_it_was_given_warm(qtbot, worker_pool):
    from app.window import MainWindow

    qtbot.waitUntil(worker_pool.settled, timeout=120_000)
    w = MainWindow(pool=worker_pool)
    w.show()
    w.close()
    assert worker_pool.settled()  # its spares were not killed with the window


def test_closing_a_window_ends_the_pool_it_made(qtbot):
    from app.window import MainWindow

    w = MainWindow()
    w.show()
    qtbot.waitUntil(w.pool.settled, timeout=120_000)
    spares = list(w.pool._alive())
    w.close()
    assert spares and all(s.proc.state().name == "NotRunning" for s in spares)


def test_closing_a_window_ends_its_kept_session_in_a_shared_pool(qtbot, worker_pool):
    from conftest import EXAMPLES, run_analysis

    from app.window import MainWindow

    w = MainWindow(pool=worker_pool)
    w.show()
    run_analysis(qtbot, w, EXAMPLES / "seed3_chain_rule.py")
    session = w.jacobian.worker
    assert session is not None and session.session_alive()  # kept for Jacobian requests
    # its worker holds the analyzed program: it goes with the window, not with the pool
    with qtbot.waitSignal(session.finished, timeout=15_000):
        w.close()
