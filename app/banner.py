"""Error banner: every failure is shown in the window with file:line and details."""

from __future__ import annotations

import html

from PySide6.QtCore import Signal
from PySide6.QtGui import QTextDocumentFragment
from PySide6.QtWidgets import QComboBox, QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout

from tfviz.palette import STYLES
from tfviz.vocabulary import Category

from . import theme
from .display import location


class ErrorBanner(QFrame):
    targetChosen = Signal(str)
    locationClicked = Signal(str, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("banner")
        self.setStyleSheet(
            f"#banner {{ background: {theme.BANNER_FILL};"
            f" border-bottom: 2px solid {STYLES[Category.RAISES].color}; }}"
            f" QLabel {{ color: {theme.BANNER_INK}; }}"
        )
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.title.setOpenExternalLinks(False)
        self.title.linkActivated.connect(self._link)
        self.targets = QComboBox()
        self.pick = QPushButton("Analyze this target")
        self.pick.clicked.connect(lambda: self.targetChosen.emit(self.targets.currentText()))
        self.toggle = QPushButton("Details")
        self.toggle.setCheckable(True)
        close = QPushButton("✕")
        close.setFlat(True)
        close.clicked.connect(self.hide)
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setMaximumHeight(220)
        self.detail.hide()
        self.toggle.toggled.connect(self.detail.setVisible)
        row = QHBoxLayout()
        row.addWidget(self.title, 1)
        for w in (self.targets, self.pick, self.toggle, close):
            row.addWidget(w)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        lay.addLayout(row)
        lay.addWidget(self.detail)
        self.hide()

    def _link(self, href: str) -> None:
        path, _, line = href.rpartition(":")
        self.locationClicked.emit(path, int(line or 0))

    def show_error(
        self,
        message: str,
        file: str | None = None,
        line: int | None = None,
        code: str = "",
        detail: str = "",
        candidates: list[str] | None = None,
        base_dir: str | None = None,
        prompt: str = "",
        note: str = "",
        cell: str = "",
        cell_line: int | None = None,
    ) -> None:
        """Show ``message``; ``file`` is shown relative to ``base_dir`` (full path in the tooltip).

        ``candidates`` are functions to offer as targets, introduced by ``prompt``;
        ``note`` (rich text) is a line of advice under the message."""
        candidates = list(candidates or [])
        where = ""
        if file:
            loc = f"{file}:{line}" if line else file
            shown = location(file, line, base_dir, cell, cell_line)  # a notebook's line by its cell
            where = f" <a href='{html.escape(loc)}'>{html.escape(shown)}</a>"
        self.title.setToolTip(f"{file}:{line}" if file and line else file or "")
        text = f"<b>{html.escape(message)}</b>{where}"
        if code:
            text += f"<br><code>{html.escape(code)}</code>"
        if note:
            text += f"<br>{note}"
        if candidates:
            text += "<br>" + html.escape(prompt or "Pick the function to differentiate:")
        self.title.setText(text)
        self.targets.clear()
        self.targets.addItems(candidates or [])
        self.targets.setVisible(bool(candidates))
        self.pick.setVisible(bool(candidates))
        self.detail.setPlainText(detail or "")
        # as tall as a short detail needs (a usage message is two lines), at most 220 px
        lines = sum(1 + len(ln) // 140 for ln in (detail or "").splitlines()) or 1
        self.detail.setFixedHeight(min(220, self.detail.fontMetrics().lineSpacing() * lines + 14))
        self.toggle.setVisible(bool(detail))
        self.toggle.setChecked(bool(detail) and not candidates and len(detail) < 4000)
        self.show()

    def plain_text(self) -> str:
        """What the banner says, as a reader sees it (no markup), then its details."""
        title = QTextDocumentFragment.fromHtml(self.title.text()).toPlainText()
        return title + "\n" + self.detail.toPlainText()
