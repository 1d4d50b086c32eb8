"""Open Recent: scripts and saved analyses, most recent first, kept across restarts."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMenu

from .start_page import StartPage, recent_label

MAX_RECENT = 10


class RecentFiles:
    """The recent-files list of the File menu and of the start page; ``open`` opens one."""

    def __init__(
        self, settings: QSettings, menu: QMenu, start: StartPage, open: Callable[[str], None]
    ) -> None:
        self.settings, self.menu, self.start, self.open = settings, menu, start, open
        self.refresh()

    def files(self) -> list[str]:
        v: Any = self.settings.value("recent", [])  # a list, or one path, as QSettings reads it back
        v = [v] if isinstance(v, str) else list(v or [])
        return [p for p in v if os.path.exists(p)]

    def add(self, path: str) -> None:
        r = [path] + [p for p in self.files() if p != path]
        self.settings.setValue("recent", r[:MAX_RECENT])
        self.refresh()

    def refresh(self) -> None:
        files = self.files()
        self.start.set_recent(files)
        self.menu.clear()
        for p in files:
            self.menu.addAction(recent_label(p), lambda p=p: self.open(p))  # type: ignore[misc]
        self.menu.setEnabled(bool(files))
