"""No ghost tab bars: Qt leaves a stale copy of every tab group after the first (and more
after restoring a saved layout); the window hides them, never a group's live bar."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTabBar

from app.panels.tab_bars import hide_stale_tab_bars, is_live


def _shown_bars(w) -> list[QTabBar]:
    return [
        b for b in w.findChildren(QTabBar, options=Qt.FindDirectChildrenOnly) if b.isVisible() and b.count()
    ]


def _new_window(qtbot, before_show=None):
    from app.window import MainWindow
    from app.worker_client import WorkerPool

    w = MainWindow(pool=WorkerPool(spare=False))
    qtbot.addWidget(w)
    w.resize(1400, 900)
    if before_show is not None:
        before_show(w)
    w.show()
    qtbot.wait(100)
    return w


def _ghost(w, tabs=("Details", "Search")) -> QTabBar:
    """What Qt leaves behind: a copy of a group's bar, where the group was when made."""
    bar = QTabBar(w)
    for t in tabs:
        bar.addTab(t)
    bar.setGeometry(1140, 382, 260, 26)
    bar.show()
    return bar


def _check(w) -> None:
    bars = _shown_bars(w)
    groups = [tuple(b.tabText(i) for i in range(b.count())) for b in bars]
    assert len(groups) == len(set(groups)), groups  # one bar per tab group
    assert {"Details", "Search"} <= {t for g in groups for t in g}  # the groups keep their bar
    assert {"Problems", "Log"} <= {t for g in groups for t in g}
    docks = {d.windowTitle(): d for d in w.docks.values()}
    assert all(is_live(b, docks) for b in bars)


def test_a_new_window_shows_one_bar_per_tab_group(qtbot):
    w = _new_window(qtbot)
    _check(w)
    assert hide_stale_tab_bars(w) == 0  # nothing left to hide, and the live bars stay


def test_a_ghost_bar_is_hidden_when_the_window_shows_and_the_live_one_stays(qtbot):
    ghosts = []
    w = _new_window(qtbot, lambda w: ghosts.append(_ghost(w)))
    assert ghosts[0].isHidden()
    _check(w)


def test_a_ghost_made_later_is_hidden_but_a_lone_bar_never_is(qtbot):
    w = _new_window(qtbot)
    ghost, lone = _ghost(w), _ghost(w, ("Alone", "Unmatched"))
    assert hide_stale_tab_bars(w) == 1
    assert ghost.isHidden() and not lone.isHidden()  # no live twin: left alone
    lone.hide()
    _check(w)


def test_a_restored_layout_shows_one_bar_per_tab_group(qtbot):
    first = _new_window(qtbot)
    first.close()  # saves the layout
    try:
        again = _new_window(qtbot)  # restores it: Qt makes more ghost bars here
        assert again._restored
        _check(again)
        again.docks["Search"].raise_()  # switching tabs keeps the one bar
        qtbot.wait(50)
        _check(again)
    finally:
        first.settings.remove("state")
        first.settings.remove("geometry")
