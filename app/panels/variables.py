"""The Variables panel: one row per trainable variable, grouped by layer, sortable, filterable.

Each row says the variable's Python path (``model.head.kernel``) with its layer's name
beside it in grey (``head``), how its gradient ends (``flows``, ``none: frozen_copy``), its
shape and gradient norm. A model with many variables (ResNet50: 214) is grouped by layer:
one header row per layer with its worst status and a count, its variables under it.
Variables read but not trained follow, greyed; weights Keras holds frozen, when there are
several (a frozen base of hundreds), under one collapsed row that counts them.
The filter field keeps the rows whose name, layer or gradient words contain the text.
Clicking a column header sorts by it (|grad| and shape numerically); a third click
returns to the report's order (order of first use).
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QStyle,
    QStyledItemDelegate,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from tfviz.report import FROZEN_REASON, ReadNotTrained, Report, VariableReport
from tfviz.textreport import frozen_summary

from .. import theme
from ..display import norm_text, shape_text
from ..graph.palette import status_icon, text_color, variable_look
from .docks import ROLE, Tree

#: Short words for the gradient column: the kind follows, the full sentence is in the tooltip.
STATUS_WORD = {
    "connected": "flows",
    "disconnected": "none",
    "broken": "raises",
    "zero": "zero",
    "nan": "NaN",
    "vanishing": "vanishing",
    "exploding": "exploding",
    "cancelled": "cancelled",
    "not_trained": "not trained",
    "read_not_trained": "read, not trained here",
}

#: Tooltips of the icon.
LOOK_TIP = {
    "zero": "connected, but its gradient is exactly zero at these values (warning)",
    "nan": "connected, but its gradient is NaN or Inf at these values",
    "vanishing": "connected, but its gradient is over 5 decades smaller than near the loss:"
    " too small to train it (warning)",
    "exploding": "connected, but its gradient is over 5 decades larger than near the loss (warning)",
    "cancelled": "connected, but its gradient is rounding noise next to its own layer's:"
    " something after the layer cancels it (information)",
    "not_trained": "not trained: the loss reads it, but this training step never updates it",
    "read_not_trained": "read on purpose, not trained in this step: a separate model (no problem)",
}

#: Worst first: a layer's header shows its worst variable's icon.
SEVERITY = [
    "broken",
    "nan",
    "disconnected",
    "not_trained",
    "zero",
    "exploding",
    "vanishing",
    "cancelled",
    "connected",
    "read_not_trained",
]
#: The layer's name, drawn grey beside the Python path (flat list) or as the header's text.
LAYER_ROLE = Qt.ItemDataRole.UserRole + 1
#: A row's sort key for a column (columns 0..4).
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
#: Lists longer than this open grouped by layer (ResNet50's 214 rows become 107 layers).
GROUP_ABOVE = 12
#: Marks the header row of the weights Keras holds frozen: a group, not a layer.
FROZEN_GROUP_ROLE = Qt.ItemDataRole.UserRole + 5
#: Frozen weights beyond this many are listed under one collapsed row: transfer learning
#: freezes a base of hundreds, which would bury the model's own variables.
FROZEN_ROWS_SHOWN = 1
COLUMNS = ["", "variable", "gradient", "shape", "|grad|"]
#: the width under which a narrow panel never cuts the shape column: ``(784, 10)`` whole
SHAPE_LEAST = 76
NO_LAYER = "(no layer)"
EMPTY = "Open a script to see its trainable variables and whether each gets a gradient."


def layer_of(v: VariableReport) -> str:
    """The layer a variable belongs to: its TensorFlow path without the variable's own name.

    >>> layer_of(VariableReport("m.head.kernel", "head/kernel", "float32", [], "connected"))
    'head'
    >>> layer_of(VariableReport("w", "w:0", "float32", [], "connected"))
    ''
    """
    path = (v.tf_name or "").split(":", 1)[0]
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _numel(shape) -> float:
    if not shape:
        return 0.0 if shape is None else 1.0
    n = 1.0
    for d in shape:
        n *= d if d is not None else 0
    return n


class _Item(QTreeWidgetItem):
    """Sorts by the key stored per column (numbers as numbers); rows read on purpose but
    not trained (greyed) stay after the model's own variables whatever the order."""

    def __lt__(self, other) -> bool:
        tree = self.treeWidget()
        col = tree.sortColumn() if tree else 0
        asc = tree is None or tree.header().sortIndicatorOrder() == Qt.SortOrder.AscendingOrder
        a, b = self.data(col, SORT_ROLE), other.data(col, SORT_ROLE)
        ga, gb = bool(self.data(1, SORT_ROLE + 1)), bool(other.data(1, SORT_ROLE + 1))
        if ga != gb:  # greyed rows last in either direction
            return gb if asc else ga
        if a is None or b is None:
            return super().__lt__(other)
        return a < b


def _greyed(name: str, words: str, order: int, name_key: str) -> QTreeWidgetItem:
    """A row read but not trained here: greyed, with the read-not-trained icon, kept after
    the model's own variables in any order (``name_key`` sorts it by name)."""
    look = "read_not_trained"
    it = _Item(["", name, words, "", ""])
    it.setIcon(0, status_icon(look))
    grey = QBrush(QColor(text_color(look)))
    for col in (1, 2):
        it.setForeground(col, grey)
    for col in range(5):
        it.setData(col, SORT_ROLE, order if col != 1 else name_key)
    it.setData(1, SORT_ROLE + 1, True)
    it.setData(1, SORT_ROLE + 2, order)
    return it


class _NameDelegate(QStyledItemDelegate):
    """Column 1: the Python path, and in the room it leaves, its layer's name right-aligned in grey."""

    def paint(self, painter, option, index) -> None:
        layer = index.data(LAYER_ROLE)
        if not layer or index.column() != 1:
            super().paint(painter, option, index)
            return
        fm = painter.fontMetrics()
        room = option.rect.width() - 8
        # The path comes first: the layer gets only the room the whole path leaves.
        path_w = fm.horizontalAdvance(str(index.data(Qt.ItemDataRole.DisplayRole) or ""))
        lw = min(fm.horizontalAdvance(layer) + 4, room - path_w - 10)
        lay = fm.elidedText(layer, Qt.TextElideMode.ElideMiddle, lw) if lw >= 40 else ""
        # the default paint draws the name in the room the layer leaves
        opt = type(option)(option)
        self.initStyleOption(opt, index)
        opt.rect = QRect(option.rect)
        opt.rect.setWidth(max(0, option.rect.width() - (lw + 10 if lay else 0)))
        w = opt.widget
        style = w.style() if w else None
        if style is not None:
            full = type(option)(option)
            self.initStyleOption(full, index)
            full.text = ""
            # background, selection
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, full, painter, w)
            opt.backgroundBrush = QBrush(Qt.BrushStyle.NoBrush)
            opt.state &= ~QStyle.StateFlag.State_HasFocus
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, w)
        else:
            super().paint(painter, opt, index)
        if lay:
            painter.save()
            selected = bool(option.state & QStyle.StateFlag.State_Selected)
            painter.setPen(option.palette.highlightedText().color() if selected else QColor(theme.QUIET_LINE))
            r = QRect(option.rect.right() - lw - 4, option.rect.top(), lw, option.rect.height())
            painter.drawText(r, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, lay)
            painter.restore()


class VariablesPanel(Tree):
    """One row per trainable variable: status icon, Python path (layer beside it), how its
    gradient ends (``flows``, ``none: frozen_copy``, ``raises: unimplemented``), shape, |grad|.

    :attr:`box` is the widget to put in the dock: the filter field and the list."""

    variableSelected = Signal(object)  # VariableReport or None
    layerSelected = Signal(str)  # a layer header row: the layer's name
    reportSet = Signal()  # a new report (or none) is listed

    def __init__(self, parent=None):
        super().__init__(COLUMNS, EMPTY, parent)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.setItemDelegateForColumn(1, _NameDelegate(self))
        hdr = self.header()
        hdr.setStretchLastSection(False)
        hdr.setSectionResizeMode(0, QHeaderView.ResizeMode.Fixed)
        hdr.resizeSection(0, 26)
        hdr.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for c in range(2, len(COLUMNS)):  # sized to their contents by fit_columns, within the row
            hdr.setSectionResizeMode(c, QHeaderView.ResizeMode.Interactive)
        hdr.setMinimumSectionSize(24)
        self._fit_later = QTimer(self, singleShot=True, interval=0)
        self._fit_later.timeout.connect(self.fit_columns)
        hdr.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # the report's order until a header is clicked
        hdr.setSortIndicatorClearable(True)  # third click: back to the order of first use
        hdr.sortIndicatorChanged.connect(self._sort_changed)
        self.headerItem().setToolTip(0, "status (sort: worst first)")
        self.headerItem().setToolTip(1, "Python path of the variable; its layer in grey")
        self.headerItem().setToolTip(4, "L2 norm of the variable's gradient")
        self.itemSelectionChanged.connect(self._selection_changed)
        self.report: Report | None = None
        self.grouped = False

        self.box = QWidget()
        self.filter = QLineEdit(placeholderText="Filter: name, layer or status (e.g. none, zero)")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self.apply_filter)
        self.by_layer = QCheckBox("By layer")
        self.by_layer.setToolTip("Group the variables under their layers")
        self.by_layer.toggled.connect(self._group_toggled)
        top = QHBoxLayout()
        top.setContentsMargins(2, 2, 2, 0)
        top.addWidget(self.filter, 1)
        top.addWidget(self.by_layer)
        lay = QVBoxLayout(self.box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(top)
        lay.addWidget(self)

    # -- contents -----------------------------------------------------------------
    def set_report(self, report: Report | None, grouped: bool | None = None) -> None:
        self.report = report
        if grouped is None:
            layers = {layer_of(v) for v in report.variables} if report else set()
            grouped = bool(report) and len(report.variables) > GROUP_ABOVE and len(layers) > 1
        self.by_layer.blockSignals(True)
        self.by_layer.setChecked(grouped)
        self.by_layer.blockSignals(False)
        self._fill(grouped)
        self.reportSet.emit()

    def _group_toggled(self, on: bool) -> None:
        current = self.current_variable()
        self._fill(on)
        if current is not None:
            self.select_name(current.name)

    def _fill(self, grouped: bool) -> None:
        report = self.report
        self.setSortingEnabled(False)
        self.clear()
        self.grouped = grouped
        # Cut in the middle, grouped or not: the path's head says whose weight it is
        # (``model.get_layer(…``) and its tail which one (``….kernel``).
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        unread = report.read_not_trained if report else []
        frozen = [r for r in unread if r.reason == FROZEN_REASON]
        if len(frozen) <= FROZEN_ROWS_SHOWN:
            frozen = []
        self.setRootIsDecorated(grouped or bool(frozen))
        self.setIndentation(14)
        self.header().resizeSection(0, 26 + (2 * self.indentation() if grouped or frozen else 0))
        self.placeholder = EMPTY if report is None else "The target reads no trainable variable."
        heads: dict[str, QTreeWidgetItem] = {}
        members: dict[str, list[str]] = {}
        for i, v in enumerate(report.variables if report else []):
            it = self._variable_item(v, i)
            layer = layer_of(v)
            if grouped:
                key = layer or NO_LAYER
                if key not in heads:
                    heads[key] = self._layer_item(key, len(heads))
                    self.addTopLevelItem(heads[key])
                    members[key] = []
                heads[key].addChild(it)
                members[key].append(variable_look(v.status, v.kind, v.magnitude))
            else:
                it.setData(1, LAYER_ROLE, layer)
                self.addTopLevelItem(it)
        for key, looks in members.items():
            self._summarise(heads[key], looks)
        n = len(report.variables) if report else 0
        for j, r in enumerate(r for r in unread if not frozen or r.reason != FROZEN_REASON):
            self.addTopLevelItem(self._read_not_trained_item(r, n + j))
        if frozen:
            head = self._frozen_item(frozen, n + len(unread))
            self.addTopLevelItem(head)
            head.addChildren([self._read_not_trained_item(r, n + j) for j, r in enumerate(frozen)])
        if grouped:
            self.expandAll()
        self._collapse_frozen()
        self.setSortingEnabled(True)
        self.apply_filter(self.filter.text())
        self.fit_columns()  # the new rows' contents

    def _variable_item(self, v: VariableReport, order: int) -> QTreeWidgetItem:
        look = variable_look(v.status, v.kind, v.magnitude)
        word = STATUS_WORD.get(look, look)
        if look == "not_trained":  # the reason is in the tooltip
            text = word
        elif look != v.status:  # zero or NaN: name the op where it happens
            text = f"{word}: {v.blocked_at[0].rsplit('/', 1)[-1]}" if v.blocked_at else word
        else:
            text = f"{word}: {v.kind}" if v.kind else word
        it = _Item(["", v.name, text, shape_text(v.shape), norm_text(v.grad_norm)])
        it.setIcon(0, status_icon(look))
        it.setForeground(2, QBrush(QColor(text_color(look))))
        tip = LOOK_TIP.get(look, v.status)
        layer = layer_of(v)
        it.setToolTip(0, tip)
        it.setToolTip(
            1,
            f"{v.name}\n{v.tf_name} · {v.dtype}{shape_text(v.shape)}"
            + (f"\nlayer: {layer}" if layer else ""),
        )
        it.setToolTip(
            2,
            tip
            + (f" ({v.kind})" if v.kind and look == v.status else "")
            + (f"\n{v.explanation}" if v.explanation else ""),
        )
        for col in (3, 4):
            it.setTextAlignment(col, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        it.setData(0, ROLE, v)
        g = v.grad_norm if v.grad_norm is not None else -1.0
        for col, key in enumerate(
            (
                SEVERITY.index(look) * 1e6 + order if look in SEVERITY else order,
                v.name.lower(),
                f"{text}\0{order:06d}",
                _numel(v.shape),
                g,
            )
        ):
            it.setData(col, SORT_ROLE, key)
        it.setData(1, SORT_ROLE + 2, order)
        return it

    def _layer_item(self, layer: str, order: int) -> QTreeWidgetItem:
        it = _Item(["", layer, "", "", ""])
        f = QFont()
        f.setBold(True)
        it.setFont(1, f)
        it.setData(0, ROLE, None)
        it.setData(0, LAYER_ROLE, layer)
        for col in range(5):
            it.setData(col, SORT_ROLE, order if col != 1 else layer.lower())
        it.setData(1, SORT_ROLE + 2, order)
        it.setFirstColumnSpanned(False)
        return it

    def _summarise(self, head: QTreeWidgetItem, looks: list[str]) -> None:
        worst = min(looks, key=lambda s: SEVERITY.index(s) if s in SEVERITY else 99)
        sized = {k: looks.count(k) for k in ("vanishing", "exploding", "cancelled")}
        bad = sum(1 for s in looks if s not in ("connected", "read_not_trained", *sized))
        head.setIcon(0, status_icon(worst))
        n = len(looks)
        words = f"{n} variable{'s' if n != 1 else ''}"
        words += f", {bad} without a flowing gradient" if bad else ""
        # these flow, at a size that cannot train: said as what they are
        words += "".join(f", {k} {s}" for s, k in sized.items() if k)
        bad += sum(sized.values())
        head.setText(2, words)
        head.setForeground(2, QBrush(QColor(text_color(worst) if bad else theme.MUTED)))
        head.setToolTip(1, f"layer {head.text(1)}: {words}")
        sev = SEVERITY.index(worst) if worst in SEVERITY else 99
        head.setData(0, SORT_ROLE, sev * 1e6 + head.data(1, SORT_ROLE + 2))

    def _read_not_trained_item(self, r, order: int) -> QTreeWidgetItem:
        """A variable the loss reads on purpose (a separate model's, or a weight Keras holds
        frozen): greyed, after the others."""
        look = "read_not_trained"
        frozen = r.reason == FROZEN_REASON
        v = VariableReport(name=r.name, tf_name="", dtype="", shape=[], status=look, explanation=r.reason)
        it = _greyed(
            r.name, f"{STATUS_WORD[look]}: {'frozen' if frozen else 'separate model'}", order, r.name.lower()
        )
        tip = (
            "frozen in Keras (trainable = False): read, not trained, as the script asks"
            if frozen
            else LOOK_TIP[look]
        )
        it.setToolTip(0, tip)
        it.setToolTip(1, r.name)
        it.setToolTip(2, tip if frozen else f"{tip}\n{r.reason}")
        it.setData(0, ROLE, v)
        return it

    def _frozen_item(self, frozen: list[ReadNotTrained], order: int) -> QTreeWidgetItem:
        """The collapsed row the weights Keras holds frozen are listed under, counted by the
        object that holds them, as the text report says it."""
        it = _greyed(
            "frozen in Keras", f"{len(frozen)} weights: {STATUS_WORD['read_not_trained']}", order, "\uffff"
        )
        tip = frozen_summary([r.name for r in frozen])
        for col in (0, 1, 2):
            it.setToolTip(col, tip)
        it.setData(0, ROLE, None)
        it.setData(0, FROZEN_GROUP_ROLE, True)
        return it

    def _frozen_group(self) -> QTreeWidgetItem | None:
        for i in range(self.topLevelItemCount()):
            top = self.topLevelItem(i)
            if top.data(0, FROZEN_GROUP_ROLE):
                return top
        return None

    def _collapse_frozen(self) -> None:
        head = self._frozen_group()
        if head is not None:
            head.setExpanded(False)

    # -- reading ------------------------------------------------------------------
    def rows(self) -> list[QTreeWidgetItem]:
        """Every variable's row, in the order shown (layer headers left out)."""
        out = []
        for i in range(self.topLevelItemCount()):
            top = self.topLevelItem(i)
            if top.data(0, ROLE) is not None:
                out.append(top)
            out.extend(top.child(j) for j in range(top.childCount()))
        return out

    def layers(self) -> list[QTreeWidgetItem]:
        return [
            top
            for top in (self.topLevelItem(i) for i in range(self.topLevelItemCount()))
            if top.data(0, ROLE) is None and not top.data(0, FROZEN_GROUP_ROLE)
        ]

    def visible_rows(self) -> list[QTreeWidgetItem]:
        return [
            it for it in self.rows() if not it.isHidden() and not (it.parent() and it.parent().isHidden())
        ]

    def current_variable(self) -> VariableReport | None:
        it = self.currentItem()
        return it.data(0, ROLE) if it is not None and self.selectedItems() else None

    def select_name(self, name: str) -> bool:
        for it in self.rows():
            if it.data(0, ROLE).name == name:
                if it.isHidden():
                    self.filter.clear()
                self.setCurrentItem(it)
                self.scrollToItem(it)
                return True
        return False

    # -- sorting, filtering -------------------------------------------------------------
    def _sort_changed(self, col: int, _order) -> None:
        if col < 0:  # cleared: the report's order
            self._restore_order()

    def _restore_order(self) -> None:
        self.setSortingEnabled(False)
        tops = [self.takeTopLevelItem(0) for _ in range(self.topLevelItemCount())]
        tops.sort(key=lambda it: (bool(it.data(1, SORT_ROLE + 1)), it.data(1, SORT_ROLE + 2) or 0))
        for it in tops:
            kids = [it.takeChild(0) for _ in range(it.childCount())]
            kids.sort(key=lambda k: k.data(1, SORT_ROLE + 2) or 0)
            it.addChildren(kids)
        self.addTopLevelItems(tops)
        if self.grouped:
            self.expandAll()
        self._collapse_frozen()
        self.header().blockSignals(True)
        self.header().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.header().blockSignals(False)
        self.setSortingEnabled(True)

    #: the share of the row the variable's name keeps when the panel is narrow
    NAME_SHARE = 0.45

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit_later.start()  # once the viewport has its new width

    def fit_columns(self) -> None:
        """Keep the name readable in a narrow panel (beside the Jacobian dock it was cut to
        ``mo…el``): the gradient column, whose layer rows' summaries read well cut, gives up
        width until the name has :attr:`NAME_SHARE` of the row; the shape and the norm,
        short and exact, stay whole; the name column stretches over the rest."""
        hdr = self.header()
        room = self.viewport().width() - hdr.sectionSize(0)
        if room <= 0:
            return
        wanted = {c: max(self.sizeHintForColumn(c), hdr.sectionSizeHint(c)) for c in range(2, len(COLUMNS))}
        gradient, shape, norm = 2, 3, 4
        least = hdr.minimumSectionSize() * 2
        spare = room * (1 - self.NAME_SHARE) - wanted[norm]
        # the gradient column first, down to its least; then the shape, to what shows a
        # short shape whole (a long one is cut in its middle: ``(3, 3,…, 64)``)
        width_gradient = max(least, min(wanted[gradient], spare - wanted[shape]))
        width_shape = max(min(wanted[shape], SHAPE_LEAST), min(wanted[shape], spare - width_gradient))
        for c, w in ((gradient, width_gradient), (shape, width_shape), (norm, wanted[norm])):
            hdr.resizeSection(c, int(w))

    def setSortingEnabled(self, on: bool) -> None:  # noqa: N802 - Qt's name
        """Enabling sorting keeps the current order until a header is clicked."""
        hdr = self.header()
        col, order = hdr.sortIndicatorSection(), hdr.sortIndicatorOrder()
        if on and (col < 0 or col >= len(COLUMNS)):
            hdr.blockSignals(True)
            super().setSortingEnabled(True)
            hdr.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
            hdr.blockSignals(False)
            return
        super().setSortingEnabled(on)
        if on:
            self.sortItems(col, order)

    def apply_filter(self, text: str) -> None:
        low = text.strip().lower()
        for i in range(self.topLevelItemCount()):
            top = self.topLevelItem(i)
            if top.data(0, ROLE) is None:  # a layer: shown when it or one of its variables matches
                head_hit = bool(low) and low in top.text(1).lower()
                any_kid = False
                for j in range(top.childCount()):
                    kid = top.child(j)
                    hit = not low or head_hit or self._matches(kid, low)
                    kid.setHidden(not hit)
                    any_kid |= hit
                top.setHidden(not any_kid)
                if top.data(0, FROZEN_GROUP_ROLE):  # open while the filter finds weights in it
                    top.setExpanded(bool(low) and any_kid)
            else:
                top.setHidden(bool(low) and not self._matches(top, low))

    @staticmethod
    def _matches(it: QTreeWidgetItem, low: str) -> bool:
        layer = it.data(1, LAYER_ROLE) or (it.parent().text(1) if it.parent() else "")
        return any(low in s.lower() for s in (it.text(1), it.text(2), layer or ""))

    def _selection_changed(self) -> None:
        it = self.currentItem() if self.selectedItems() else None
        if it is not None and it.data(0, FROZEN_GROUP_ROLE):
            self.variableSelected.emit(None)
            return
        if it is not None and it.data(0, ROLE) is None:
            self.layerSelected.emit(it.text(1))
            self.variableSelected.emit(None)
            return
        self.variableSelected.emit(it.data(0, ROLE) if it is not None else None)
