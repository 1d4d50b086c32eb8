"""Graph view plus its toolbar (search, toggles) and an always-visible legend."""

from __future__ import annotations

import re

from PySide6.QtCore import QPointF, QSize, Qt
from PySide6.QtGui import QPainter, QPen, QPixmap
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from .graph_view import GraphView
from .palette import STYLES, pen_for


def legend_icon(key: str) -> QPixmap:
    size = QSize(34, 12)
    pm = QPixmap(size)
    pm.fill(Qt.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.Antialiasing)
    pen = QPen(pen_for(key if key not in ("raises", "cut") else
                       {"raises": "unimplemented", "cut": "frozen_copy"}[key]))
    p.setPen(pen)
    p.drawLine(QPointF(1, size.height() / 2), QPointF(size.width() - 1, size.height() / 2))
    p.end()
    return pm


class Legend(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(6, 2, 6, 2)
        lay.setSpacing(4)
        for key, st in STYLES.items():
            icon = QLabel()
            icon.setPixmap(legend_icon(key))
            text = st.label.replace("kind", "frozen_copy, assign, …")
            lab = QLabel(f"<span style='color:{st.color if key != 'off_path' else '#777'}'>"
                         f"{st.marker}</span> {text}")
            lab.setToolTip(st.label)
            lay.addWidget(icon)
            lay.addWidget(lab)
            lay.addSpacing(8)
        lay.addStretch(1)
        self.setStyleSheet("QLabel { font-size: 8pt; color: #333; }")


class GraphPanel(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.view = GraphView(self)
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        self.search = QLineEdit(placeholderText="Find op: name, type or /regex/  (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.search.returnPressed.connect(self.find_next)
        self.search.textChanged.connect(self._reset_search)
        self.prev_btn = QPushButton("◀")
        self.next_btn = QPushButton("▶")
        self.prev_btn.setToolTip("Previous match (Shift+Enter)")
        self.next_btn.setToolTip("Next match (Enter)")
        self.prev_btn.clicked.connect(self.find_prev)
        self.next_btn.clicked.connect(self.find_next)
        self.match_label = QLabel("")
        self.only_path = QCheckBox("Only gradient paths")
        self.only_path.toggled.connect(self.view.set_only_path)
        self.magnitude = QCheckBox("Gradient magnitude")
        self.magnitude.setToolTip("Edge width and colour from log10(gradient norm)")
        self.magnitude.toggled.connect(self.view.set_magnitude)
        expand = QPushButton("Expand all")
        expand.clicked.connect(lambda: self.view.set_all_expanded(True))
        collapse = QPushButton("Collapse all")
        collapse.clicked.connect(lambda: self.view.set_all_expanded(False))
        fit = QPushButton("Fit")
        fit.setToolTip("Fit the graph in the view (F)")
        fit.clicked.connect(self.view.fit)
        for w in (self.search, self.prev_btn, self.next_btn, self.match_label, self.only_path,
                  self.magnitude, expand, collapse, fit):
            bar.addWidget(w)
        bar.setStretch(0, 1)
        self.legend = Legend()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addLayout(bar)
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
        self.view.select_op(self._matches[self._idx])
        self.match_label.setText(f"{self._idx + 1}/{len(self._matches)}")

    def find_next(self) -> None:
        self._step(1)

    def find_prev(self) -> None:
        self._step(-1)

    def focus_search(self) -> None:
        self.search.setFocus(Qt.ShortcutFocusReason)
        self.search.selectAll()

    def keyPressEvent(self, e) -> None:
        if e.key() in (Qt.Key_Return, Qt.Key_Enter) and e.modifiers() & Qt.ShiftModifier:
            self.find_prev()
            return
        super().keyPressEvent(e)


