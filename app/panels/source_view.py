"""Read-only source panel with Python highlighting and a marked line.

What it shows is never chosen by a file's contents. The one file it reads from disk is
the script the user opened for a live analysis (:meth:`SourceView.load`), and that only
through :func:`tfviz.safefile.read_regular` (a regular file, opened non-blocking, size
capped). Any other file a report names, and every file a saved analysis names (a path
written by someone else: ``/proc/kmsg`` would freeze the window, ``~/.ssh/id_rsa`` would
be shown), is shown as the lines the report itself carries (each op's, variable's and
problem's ``Source.code``), never opened, never even looked up.
"""

from __future__ import annotations

import json
import keyword
import os
import re
from collections.abc import Iterator

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextCursor, QTextFormat
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit

from tfviz.report import Report, Source
from tfviz.safefile import read_regular
from tfviz.script.notebook import is_notebook
from tfviz.script.notebook import join as join_notebook

from .. import theme

#: The user's script is not read into the panel past this size.
MAX_SOURCE_BYTES = 16 * 2**20


def _fmt(color: str, bold: bool = False, italic: bool = False) -> QTextCharFormat:
    f = QTextCharFormat()
    f.setForeground(QColor(color))
    if bold:
        f.setFontWeight(QFont.Weight.Bold)
    f.setFontItalic(italic)
    return f


class PythonHighlighter(QSyntaxHighlighter):
    RULES = [
        (re.compile(r"\b(" + "|".join(keyword.kwlist) + r")\b"), _fmt(theme.SYNTAX_KEYWORD, bold=True)),
        (re.compile(r"\b(self|None|True|False)\b"), _fmt(theme.SYNTAX_CONSTANT)),
        (re.compile(r"\b\d+(\.\d+)?\b"), _fmt(theme.SYNTAX_NUMBER)),
        (re.compile(r"@\w+"), _fmt(theme.SYNTAX_DECORATOR)),
        (re.compile(r"(\"[^\"\n]*\"|'[^'\n]*')"), _fmt(theme.SYNTAX_STRING)),
        (re.compile(r"#.*$"), _fmt(theme.SYNTAX_COMMENT, italic=True)),
    ]

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt's name
        for rx, fmt in self.RULES:
            for m in rx.finditer(text):
                self.setFormat(m.start(), m.end() - m.start(), fmt)


class SourceView(QPlainTextEdit):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QFont("Monospace", 9))
        self._hl = PythonHighlighter(self.document())
        self.path = ""  # the file shown
        self.marked_line = 0
        #: the script the user opened, whose analysis is live: the only file read from disk
        self.script = ""
        self._report: Report | None = None
        self._carried: dict[str, dict[int, str]] | None = None  # file -> line -> code, lazily
        self._rows: dict[int, int] | None = None  # line -> block, when showing carried lines
        self.setPlaceholderText(
            "Open a script to see its source here; selecting an op or a problem"
            " highlights the line of your code that created it."
        )

    def load(self, path: str) -> None:
        """Show the script the user chose to analyze; only this file is ever read from disk."""
        self.script = os.path.abspath(path)
        self._show(self.script)

    def forget_script(self) -> None:
        """The window now shows a saved analysis: no file may be read, the script's neither."""
        self.script, self.path, self.marked_line, self._rows = "", "", 0, None
        self.setPlainText("")
        self.setExtraSelections([])

    def set_report(self, report: Report | None) -> None:
        """The report whose source lines stand in for the files it names."""
        self._report, self._carried = report, None
        if self._rows is not None:  # showing the old report's lines: show the new ones
            path, self.path = self.path, ""
            self._show(path)

    def reload(self) -> None:
        p, self.path = self.path, ""
        if p:
            self._show(p)

    def mark_line(self, line: int, path: str | None = None, code: str = "") -> None:
        """Highlight ``line`` (1-based) of ``path`` (default: the file shown) and scroll it
        into view; ``code`` is that line's text as the caller has it (from its report)."""
        if path:
            self._show(path, line, code)
        self.marked_line = line
        block = self._rows.get(line) if self._rows is not None else max(0, line - 1)
        if block is None:
            self.setExtraSelections([])
            return
        cur = QTextCursor(self.document().findBlockByNumber(block))
        sel = QTextEdit.ExtraSelection()
        sel.format.setBackground(QColor(theme.SOURCE_LINE))
        sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        sel.cursor = cur
        self.setExtraSelections([sel])
        self.setTextCursor(cur)
        self.centerCursor()

    def _show(self, path: str, line: int = 0, code: str = "") -> None:
        if self.script and os.path.abspath(path) == self.script:
            if path == self.path and (self._rows is None or is_notebook(path)):
                return
            try:
                text = read_regular(path, MAX_SOURCE_BYTES).decode("utf-8", errors="replace")
            except OSError as exc:
                text = f"# cannot read {path}: {exc.strerror or exc}"
            self._rows = None
            if is_notebook(path):  # its code cells, each under its name, lines numbered within it
                text, self._rows = notebook_text(path, text)
        else:
            lines = self.carried().setdefault(path, {})
            if line > 0 and code and line not in lines:
                lines[line] = code
            elif path == self.path and self._rows is not None:
                return
            text, self._rows = carried_text(path, lines)
        self.path = path
        self.setPlainText(text)
        self.marked_line = 0
        self.setExtraSelections([])

    def carried(self) -> dict[str, dict[int, str]]:
        """Every line of code the current report carries, by file (worked out on first use)."""
        if self._carried is None:
            self._carried = carried_lines(self._report)
        return self._carried

    def marked_text(self) -> str:
        if not self.marked_line:
            return ""
        if self._rows is not None:
            block = self._rows.get(self.marked_line)
            text = self.document().findBlockByNumber(block).text() if block is not None else ""
            return text.lstrip().split("  ", 1)[-1]  # without the line number
        return self.document().findBlockByLineNumber(self.marked_line - 1).text()

    def keyPressEvent(self, e) -> None:  # keep Esc/F5 for the window  # noqa: N802 - Qt's name
        if e.key() in (Qt.Key.Key_Escape, Qt.Key.Key_F5):
            e.ignore()
            return
        super().keyPressEvent(e)


def notebook_text(path: str, text: str) -> tuple[str, dict[int, int] | None]:
    r"""A notebook's code cells as the Source panel shows them, and the block of each line of
    the joined script (the lines a report names); the file's own text if it is no notebook.

    >>> text, rows = notebook_text("nb.ipynb", '{"cells": [{"cell_type": "code", "source": "a = 1",'
    ...                            ' "execution_count": 4}, {"cell_type": "markdown", "source": "x"},'
    ...                            ' {"cell_type": "code", "source": "b = a\\nc = b"}]}')
    >>> print(text)
    ── cell 1 [4] ──
      1  a = 1
    ── cell 3 ──
      1  b = a
      2  c = b
    >>> rows
    {1: 1, 2: 3, 3: 4}
    """
    try:
        cells = json.loads(text).get("cells", [])
        nb = join_notebook(path, [c for c in cells if isinstance(c, dict)])
    except (ValueError, AttributeError, TypeError):
        return text, None
    script = nb.source.split("\n")
    out: list[str] = []
    rows: dict[int, int] = {}
    for cell in nb.cells:
        out.append(f"── {cell.name()} ──")
        for line in range(cell.first, cell.last + 1):
            rows[line] = len(out)
            out.append(f"{line - cell.first + 1:>3}  {script[line - 1]}")
    return "\n".join(out), rows


def carried_lines(report: Report | None) -> dict[str, dict[int, str]]:
    """``{file: {line: code}}`` for every source line anywhere in ``report``."""
    out: dict[str, dict[int, str]] = {}
    for src in _sources(report):
        if src.code:
            out.setdefault(src.file, {}).setdefault(src.line, src.code)
    return out


def carried_text(path: str, lines: dict[int, str]) -> tuple[str, dict[int, int]]:
    """The panel's text for a file that is not read: a header, then the carried lines in
    order with their numbers, ``⋮`` where lines are missing; and line -> block.

    >>> text, rows = carried_text("/x/train.py", {3: "a = 1", 4: "b = a", 9: "loss = b"})
    >>> print(text)
    # /x/train.py (not read from disk: the lines the analysis carries)
    3  a = 1
    4  b = a
    ⋮
    9  loss = b
    >>> rows
    {3: 1, 4: 2, 9: 4}
    """
    rows: list[str] = [f"# {path} (not read from disk: the lines the analysis carries)"]
    if not lines:
        rows.append("# (it carries none of this file's lines)")
    at: dict[int, int] = {}
    width = len(str(max(lines))) if lines else 1
    prev = None
    for n in sorted(lines):
        if prev is not None and n != prev + 1:
            rows.append("⋮")
        at[n] = len(rows)
        rows.append(f"{n:>{width}}  {lines[n]}")
        prev = n
    return "\n".join(rows), at


def _sources(report: Report | None) -> Iterator[Source]:
    """Every source line in a report: its variables', problems', ops' and function bodies'."""
    if report is None:
        return
    for items in (report.variables, report.problems, report.graph.ops, report.graph.functions):
        for x in items:
            if x.source is not None:
                yield x.source
