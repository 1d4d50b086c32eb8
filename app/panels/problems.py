"""The Problems panel: every op where a gradient stops, with the line that created it.

The op column names each op once: ``Svd`` rather than ``Svd Svd`` when the op is
named after its type, the type in brackets only when the name says something else
(``SelfAdjointEigV2 (eig)``). Several problems on one op keep one row each, and the
rows after the first leave the op blank (``″``) so the column reads as a list of ops.
A problem found at no op (a variable TensorFlow and the graph judge differently) says so
(``—``) and never takes a ditto; choosing it selects its variable instead.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QHeaderView, QStyledItemDelegate, QTreeWidget, QTreeWidgetItem

from tfviz.report import Problem, Report
from tfviz.structure.hierarchy import Hierarchy

from .. import theme
from ..display import source_location
from ..graph.palette import STYLES, category, text_color
from .docks import ROLE, Tree, _base

#: the op column of a problem found at no op
NO_OP = "—"
EMPTY_PROBLEMS = "Problems appear here: every op where a gradient stops, with the line that created it."


def op_label(op_type: str, op: str) -> str:
    """The op's short name, with its type only where the name does not already say it.

    >>> op_label("Svd", "model/Svd"), op_label("StopGradient", "StopGradient_3")
    ('Svd', 'StopGradient_3')
    >>> op_label("Cast", "model/to_int"), op_label("", "x")
    ('Cast to_int', 'x')
    """
    short = op.rsplit("/", 1)[-1]
    bare = re.sub(r"_\d+$", "", short).replace("_", "").lower()
    if not op_type or op_type.lower() in (bare, short.lower()) or op_type.lower() in bare:
        return short
    return f"{op_type} {short}".strip()


def _op_name(p: Problem, names: Hierarchy | None) -> str:
    """The op as the graph names it, with its type where the name does not say it."""
    if names is None or p.op not in names.ops:
        return op_label(p.op_type, p.op)
    shown = names.display_name(p.op)
    return shown if names.user_named(p.op) else op_label(p.op_type, shown)


class _WrappedDelegate(QStyledItemDelegate):
    """The message column's rows as tall as the message wrapped at the column's width (a
    tree asks its delegate for a row's size without the column's width)."""

    def __init__(self, tree: QTreeWidget) -> None:
        super().__init__(tree)
        self._tree = tree

    def sizeHint(self, option, index):  # noqa: N802 - Qt's name
        hint = super().sizeHint(option, index)
        width = self._tree.header().sectionSize(index.column()) - 8
        text = str(index.data() or "")
        if width <= 0 or not text:
            return hint
        rect = option.fontMetrics.boundingRect(QRect(0, 0, width, 100_000), Qt.TextFlag.TextWordWrap, text)
        return QSize(hint.width(), max(hint.height(), rect.height() + 4))


class ProblemsPanel(Tree):
    problemActivated = Signal(object)  # Problem

    def __init__(self, parent=None):
        super().__init__(["kind", "op", "where", "message"], EMPTY_PROBLEMS, parent)
        # The message takes the rest of the row and wraps there: it was cut at the panel's
        # edge, and its end is often what names the cause. Rows grow to hold it.
        self.header().setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.setWordWrap(True)
        self.setUniformRowHeights(False)
        self.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.setItemDelegateForColumn(3, _WrappedDelegate(self))
        self.header().sectionResized.connect(lambda *_: self.scheduleDelayedItemsLayout())
        self.itemActivated.connect(lambda it, _c: self.problemActivated.emit(it.data(0, ROLE)))
        self.itemClicked.connect(lambda it, _c: self.problemActivated.emit(it.data(0, ROLE)))

    def set_report(self, report: Report | None, names: Hierarchy | None = None) -> None:
        """``names``: the graph's hierarchy, whose display names the op column uses."""
        self.clear()
        self.placeholder = (
            EMPTY_PROBLEMS if report is None else "No problems: the gradient reaches every variable."
        )
        base = _base(report)
        previous = None
        for p in report.problems if report else []:
            where = source_location(p.source, base) if p.source else ""
            cat = category(p.kind)
            st = STYLES[cat]
            label = _op_name(p, names) if p.op else NO_OP
            shown = label if not p.op or p.op != previous else "″"
            previous = p.op
            it = QTreeWidgetItem([f"{st.marker} {p.kind}", shown, where, p.message])
            it.setForeground(0, QBrush(QColor(text_color(cat))))
            it.setToolTip(0, f"{p.severity}: {st.label}")
            it.setToolTip(
                1,
                f"{p.op_type} {p.op} (TensorFlow's name)"
                if p.op
                else "Not at one op" + (f": about {', '.join(p.variables)}" if p.variables else ""),
            )
            if shown != label or not p.op:
                it.setForeground(1, QBrush(QColor(theme.QUIET_LINE)))
            if p.severity == "error":
                f = QFont()
                f.setBold(True)
                it.setFont(0, f)
            it.setToolTip(3, p.message + (f"\nHint: {p.hint}" if p.hint else ""))
            if p.source:
                it.setToolTip(2, f"{p.source.file}:{p.source.line}")
            it.setData(0, ROLE, p)
            it.setData(1, Qt.ItemDataRole.UserRole + 1, label)
            self.addTopLevelItem(it)
