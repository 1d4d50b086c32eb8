"""Read-only source panel with Python highlighting and a marked line."""

from __future__ import annotations

import keyword
import re

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextCursor, QTextFormat
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit


def _fmt(color: str, bold: bool = False, italic: bool = False) -> QTextCharFormat:
    f = QTextCharFormat()
    f.setForeground(QColor(color))
    if bold:
        f.setFontWeight(QFont.Bold)
    f.setFontItalic(italic)
    return f


class PythonHighlighter(QSyntaxHighlighter):
    RULES = [
        (re.compile(r"\b(" + "|".join(keyword.kwlist) + r")\b"), _fmt("#0033B3", bold=True)),
        (re.compile(r"\b(self|None|True|False)\b"), _fmt("#871094")),
        (re.compile(r"\b\d+(\.\d+)?\b"), _fmt("#1750EB")),
        (re.compile(r"@\w+"), _fmt("#9E880D")),
        (re.compile(r"(\"[^\"\n]*\"|'[^'\n]*')"), _fmt("#067D17")),
        (re.compile(r"#.*$"), _fmt("#8C8C8C", italic=True)),
    ]

    def highlightBlock(self, text: str) -> None:
        for rx, fmt in self.RULES:
            for m in rx.finditer(text):
                self.setFormat(m.start(), m.end() - m.start(), fmt)


class SourceView(QPlainTextEdit):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.NoWrap)
        self.setFont(QFont("Monospace", 9))
        self._hl = PythonHighlighter(self.document())
        self.path = ""
        self.marked_line = 0
        self.setPlaceholderText("Open a script to see its source here; selecting an op or a problem"
                                " highlights the line of your code that created it.")

    def load(self, path: str) -> None:
        if path == self.path:
            return
        self.path = path
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError as exc:
            text = f"# cannot read {path}: {exc}"
        self.setPlainText(text)
        self.marked_line = 0
        self.setExtraSelections([])

    def reload(self) -> None:
        p, self.path = self.path, ""
        if p:
            self.load(p)

    def mark_line(self, line: int, path: str | None = None) -> None:
        """Highlight ``line`` (1-based) and scroll it into view."""
        if path:
            self.load(path)
        self.marked_line = line
        block = self.document().findBlockByLineNumber(max(0, line - 1))
        cur = QTextCursor(block)
        sel = QTextEdit.ExtraSelection()
        sel.format.setBackground(QColor("#FFE9A8"))
        sel.format.setProperty(QTextFormat.FullWidthSelection, True)
        sel.cursor = cur
        self.setExtraSelections([sel])
        self.setTextCursor(cur)
        self.centerCursor()

    def marked_text(self) -> str:
        if not self.marked_line:
            return ""
        return self.document().findBlockByLineNumber(self.marked_line - 1).text()

    def keyPressEvent(self, e) -> None:  # keep Esc/F5 for the window
        if e.key() in (Qt.Key_Escape, Qt.Key_F5):
            e.ignore()
            return
        super().keyPressEvent(e)
