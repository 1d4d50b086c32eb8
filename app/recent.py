"""Open Recent: scripts and saved analyses, most recent first, kept across restarts.

``RecentFiles`` is a mixin of :class:`app.window.MainWindow`; it uses the window's
``settings``, ``start`` page, ``recent_menu`` and ``open_script``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .start_page import recent_label

if TYPE_CHECKING:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QMenu

    from .start_page import StartPage

MAX_RECENT = 10


class RecentFiles:
    """The recent-files list of the File menu and of the start page."""

    if TYPE_CHECKING:  # the window's
        settings: QSettings
        start: StartPage
        recent_menu: QMenu

        def open_script(self, path: str | None, target: str | None = None, *, run: bool = False,
                        args: list[str] | None = None, step: int | None = None) -> None: ...

    def recent_files(self) -> list[str]:
        v: Any = self.settings.value("recent", [])  # a list, or one path, as QSettings reads it back
        v = [v] if isinstance(v, str) else list(v or [])
        return [p for p in v if os.path.exists(p)]

    def _add_recent(self, path: str) -> None:
        r = [path] + [p for p in self.recent_files() if p != path]
        self.settings.setValue("recent", r[:MAX_RECENT])
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        files = self.recent_files()
        self.start.set_recent(files)
        self.recent_menu.clear()
        for p in files:
            self.recent_menu.addAction(recent_label(p), lambda p=p: self.open_script(p))  # type: ignore[misc]
        self.recent_menu.setEnabled(bool(files))
