"""Start page shown by bare ``tfviz``: bundled examples and recent files."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from tfviz.bundled import examples


def bundled_examples() -> list[Path]:
    """Installed with tfviz as package data (:mod:`tfviz.bundled`), so a wheel has them too."""
    return examples()


def notebook_intro(text: str) -> str:
    r"""A notebook's first markdown cell, past its heading; "" for none or a broken file.

    >>> notebook_intro('{"cells": [{"cell_type": "markdown", "source": "# Seed 2\\n\\nA frozen copy."}]}')
    'A frozen copy.'
    """
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return ""
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "markdown":
            src = cell.get("source", "")
            src = "".join(src) if isinstance(src, list) else str(src)
            body = [ln for ln in src.split("\n\n") if ln.strip() and not ln.lstrip().startswith("#")]
            return body[0] if body else ""
    return ""


def first_sentence(doc: str, limit: int = 110) -> str:
    """The first sentence of a docstring's first paragraph, on one line.

    >>> first_sentence("An integer cast in a loop: inside tf.function,\\nTensorFlow returns zeros. More.")
    'An integer cast in a loop: inside tf.function, TensorFlow returns zeros.'
    """
    para = " ".join(doc.split("\n\n")[0].split())
    m = re.search(r"[.!?](\s|$)", para)
    first = para[: m.end()].strip() if m else para
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def _first_doc_line(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    if path.suffix == ".ipynb":  # its first markdown cell says what it is
        return first_sentence(notebook_intro(text))
    try:
        doc = ast.get_docstring(ast.parse(text)) or ""
    except (SyntaxError, ValueError):
        doc = ""
    if doc:
        return first_sentence(doc)
    for line in text.splitlines():
        s = line.strip().strip('"').strip("'").strip()
        if s and not s.startswith("#"):
            return s
    return ""


def recent_label(path: str) -> str:
    """``model.py — project``: the file and its folder's name, not the machine path."""
    p = Path(path)
    return f"{p.name} — {p.parent.name}" if p.parent.name else p.name


class StartPage(QWidget):
    openRequested = Signal(str)
    browseRequested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        title = QLabel(
            "<h2>tfviz</h2>See why a TensorFlow model's gradients don't flow. "
            "Open your training script as it is: tfviz runs it up to its first gradient "
            "step and diagnoses that step, or differentiates a <code>loss()</code> "
            "function it defines."
        )
        title.setWordWrap(True)
        browse = QPushButton("Open script…  (Ctrl+O)")
        browse.clicked.connect(self.browseRequested)
        self.examples = QListWidget()
        self.recent = QListWidget()
        for lst in (self.examples, self.recent):
            lst.setWordWrap(True)  # long descriptions wrap instead of needing a side scroll
            lst.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            lst.itemActivated.connect(lambda it: self.openRequested.emit(it.data(Qt.ItemDataRole.UserRole)))
        for p in bundled_examples():
            it = QListWidgetItem(f"{p.name}\n    {_first_doc_line(p)}")
            it.setData(Qt.ItemDataRole.UserRole, str(p))
            it.setToolTip(str(p))
            self.examples.addItem(it)
        if not self.examples.count():
            self.examples.addItem("(no bundled examples found)")
        cols = QHBoxLayout()
        for label, w in (("Examples", self.examples), ("Recent files", self.recent)):
            box = QVBoxLayout()
            box.addWidget(QLabel(f"<b>{label}</b> — double-click to open"))
            box.addWidget(w)
            cols.addLayout(box, 3 if w is self.examples else 2)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(40, 30, 40, 30)
        lay.addWidget(title)
        lay.addWidget(browse, 0, Qt.AlignmentFlag.AlignLeft)
        lay.addLayout(cols, 1)

    def set_recent(self, paths: list[str]) -> None:
        self.recent.clear()
        for p in paths:
            it = QListWidgetItem(recent_label(p))
            it.setData(Qt.ItemDataRole.UserRole, p)
            it.setToolTip(p)
            self.recent.addItem(it)
        if not paths:
            it = QListWidgetItem("(nothing opened yet)")
            it.setFlags(Qt.ItemFlag.NoItemFlags)
            self.recent.addItem(it)
