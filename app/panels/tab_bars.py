"""Hide the ghost tab bars Qt leaves on the main window.

Each tab group that ``tabifyDockWidget`` (or ``restoreState``) makes after the first leaves
a second ``QTabBar`` with the same tabs on the window, visible, at the place the group had
when it was made; it never moves again, and where no dock covers it, it shows through as a
duplicate "Details | Search" strip (Qt 6.11). A bar is hidden only when another bar with
the same tabs is confirmed live (it sits right under the dock of its current tab), so a
group's only bar is never touched.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QRect, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QTabBar


def _tabs(bar: QTabBar) -> tuple[str, ...]:
    return tuple(bar.tabText(i) for i in range(bar.count()))


def is_live(bar: QTabBar, docks: dict[str, QDockWidget]) -> bool:
    """The bar is where Qt's layout puts a group's tabs: under its current dock, as wide."""
    dock = docks.get(bar.tabText(bar.currentIndex()).replace("&", ""))
    if dock is None or not dock.isVisible() or dock.isFloating():
        return False
    d, b = dock.geometry(), bar.geometry()
    return (
        abs(d.left() - b.left()) <= 2
        and abs(d.width() - b.width()) <= 2
        and (abs(b.top() - d.bottom() - 1) <= 4 or abs(d.top() - b.bottom() - 1) <= 4)
    )


def hide_stale_tab_bars(window) -> int:
    """Hide duplicates of a live tab bar; how many were hidden."""
    docks = {d.windowTitle(): d for d in window.findChildren(QDockWidget)}
    bars = [
        b
        for b in window.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly)
        if not b.isHidden() and b.count()
    ]
    hidden = 0
    for tabs in {_tabs(b) for b in bars}:
        same = [b for b in bars if _tabs(b) == tabs]
        live = [b for b in same if is_live(b, docks)]
        if len(same) > 1 and len(live) == 1:
            for b in same:
                if b is not live[0]:
                    b.hide()
                    b.setGeometry(QRect())
                    hidden += 1
    return hidden


def keep_tab_bars_clean(window) -> Callable[[], None]:
    """Sweep again whenever a dock moves; returns the sweep, for the window to call once
    it is laid out."""

    def later() -> None:
        QTimer.singleShot(0, lambda: hide_stale_tab_bars(window))

    for d in window.findChildren(QDockWidget):
        d.dockLocationChanged.connect(later)
        d.topLevelChanged.connect(later)
    return later
