"""Graph view plus its toolbar (search, toggles) and an always-visible legend."""

from __future__ import annotations

import re

from PySide6.QtCore import QPointF, QSize, Qt
from PySide6.QtGui import QPainter, QPen, QPixmap
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QToolButton, QVBoxLayout, QWidget

from ..flow_layout import FlowLayout
from .palette import STYLES, pen_for, text_color
from .view import GraphView


def legend_icon(key: str) -> QPixmap:
    size = QSize(34, 12)
    pm = QPixmap(size)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    pen = QPen(
        pen_for(
            key if key not in ("raises", "cut") else {"raises": "unimplemented", "cut": "frozen_copy"}[key]
        )
    )
    p.setPen(pen)
    p.drawLine(QPointF(1, size.height() / 2), QPointF(size.width() - 1, size.height() / 2))
    p.end()
    return pm


#: Legend words; the full sentence of each status is the entry's tooltip.
SHORT = {
    "passes": "passes",
    "raises": "raises",
    "cut": "cut",
    "stop_gradient": "stop_gradient",
    "integer": "integer",
    "nan": "NaN/Inf",
    "zero": "zero",
    "starved": "no gradient",
    "vanishing": "vanishing",
    "exploding": "exploding",
    "not_trained": "not trained",
    "muted": "harmless cut",
    "off_path": "off-path",
}


class Legend(QWidget):
    """One entry per edge status (line sample, marker, word); wraps onto a second row when narrow."""

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = FlowLayout(self, spacing=14, row_spacing=0)
        lay.setContentsMargins(6, 1, 6, 2)
        for key, st in STYLES.items():
            entry = QWidget()
            row = QHBoxLayout(entry)
            row.setContentsMargins(0, 0, 0, 0)
            row.setSpacing(3)
            icon = QLabel()
            icon.setPixmap(legend_icon(key))
            color = text_color(key) if key != "off_path" else "#777"
            mark = f"<span style='color:{color}'><b>{st.marker}</b></span> " if st.marker else ""
            row.addWidget(icon)
            row.addWidget(QLabel(mark + SHORT[key]))
            entry.setToolTip(st.label.replace("kind", "frozen_copy, assign, not_read, …"))
            lay.addWidget(entry)
        self.setStyleSheet("QLabel { font-size: 8pt; color: #333; }")


def _tool(text: str, tip: str, slot) -> QToolButton:
    b = QToolButton()
    b.setText(text)
    b.setToolTip(tip)
    b.setAutoRaise(False)
    b.clicked.connect(slot)
    return b


class GraphPanel(QWidget):
    """The toolbar (search, toggles, expand/collapse/fit) wraps like the legend, so the
    panel never forces the window wider than a laptop screen."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.view = GraphView(self)
        self.search = QLineEdit(placeholderText="Find op: name, type or /regex/  (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(160)
        self.search.returnPressed.connect(self.find_next)
        self.search.textChanged.connect(self._reset_search)
        self.prev_btn = _tool("◀", "Previous match (Shift+Enter, Shift+F3)", self.find_prev)
        self.next_btn = _tool("▶", "Next match (Enter, F3)", self.find_next)
        self.match_label = QLabel("")
        self.only_path = QCheckBox("Only gradient paths")
        self.only_path.setToolTip("Hide ops that are on no variable→target path")
        self.only_path.toggled.connect(lambda on: self.view.set_only_path(on, background=True))
        self.magnitude = QCheckBox("Gradient magnitude")
        self.magnitude.setToolTip("Edge width and colour from log10(gradient norm)")
        self.magnitude.toggled.connect(lambda on: self.view.set_magnitude(on, background=True))
        expand = _tool(
            "Expand all", "Open every group", lambda: self.view.set_all_expanded(True, background=True)
        )
        collapse = _tool(
            "Collapse all", "Close every group", lambda: self.view.set_all_expanded(False, background=True)
        )
        fit = _tool("Fit", "Fit the graph in the view (F)", self.view.fit)
        bar = FlowLayout(spacing=4, row_spacing=2)
        bar.setContentsMargins(4, 3, 4, 1)
        bar.add_stretching(self.search)
        for w in (
            self.prev_btn,
            self.next_btn,
            self.match_label,
            self.only_path,
            self.magnitude,
            expand,
            collapse,
            fit,
        ):
            bar.addWidget(w)
        self.legend = Legend()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        top = QWidget()
        top.setLayout(bar)
        lay.addWidget(top)
        lay.addWidget(self.legend)
        lay.addWidget(self.view, 1)
        self._matches: list[str] = []
        self._idx = -1

    def _reset_search(self) -> None:
        self._matches, self._idx = [], -1
        self.match_label.setText("")

    def matches(self, text: str) -> list[str]:
        if self.view.report is None or not text:
            return []
        if len(text) > 2 and text.startswith("/") and text.endswith("/"):
            try:
                rx = re.compile(text[1:-1], re.I)
            except re.error as exc:
                self.match_label.setText(f"bad regex: {exc}")
                return []
            test = lambda s: rx.search(s) is not None
        else:
            low = text.lower()
            test = lambda s: low in s.lower()
        return [o.id for o in self.view.report.graph.ops if test(o.name) or test(o.type) or test(o.id)]

    def _step(self, d: int) -> None:
        if not self._matches:
            self._matches = self.matches(self.search.text())
            self._idx = -1 if d > 0 else 0
        if not self._matches:
            if not self.match_label.text():
                self.match_label.setText("no match")
            return
        self._idx = (self._idx + d) % len(self._matches)
        self.view.select_op(self._matches[self._idx], background=True)
        self.match_label.setText(f"{self._idx + 1}/{len(self._matches)}")

    def find_next(self) -> None:
        self._step(1)

    def find_prev(self) -> None:
        self._step(-1)

    def focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def keyPressEvent(self, e) -> None:  # noqa: N802 - Qt's name
        if (
            e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
            and e.modifiers() & Qt.KeyboardModifier.ShiftModifier
        ):
            self.find_prev()
            return
        super().keyPressEvent(e)
