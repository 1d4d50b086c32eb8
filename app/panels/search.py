"""Search results and keyboard navigation for the graph.

*Search* (a dock, Ctrl+Shift+F): one list of every layer (group), variable and op whose
name, type or id contains the text (or matches ``/regex/``), with a kind column; Enter or a
click goes to it: a layer is revealed and selected in the graph, a variable is selected in
Variables (which shows its gradient path), an op is selected and centred.

Keys on the graph (an event filter, so the view's own code is untouched): the arrows
move the selection along the drawn edges (Down/Right: toward the target, to a consumer;
Up/Left: back, to an input), ``+``/``-`` zoom, Enter expands the selected group,
Backspace collapses the group around the selection (or the selected group).
"""

from __future__ import annotations

import re
from collections import Counter

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QLineEdit, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from tfviz.structure.hierarchy import ROOT

from .. import theme
from ..analysis import AnalysisController
from ..graph.view import GraphView
from .variables import VariablesPanel

MAX_RESULTS = 500
KIND_COLOR = {"layer": theme.ACCENT, "variable": theme.VARIABLE_ACCENT, "op": theme.OP_ACCENT}


def search(report, hierarchy, text: str) -> list[tuple[str, str, str, str]]:
    """(kind, id, name, detail) of every layer, variable and op that matches ``text``."""
    if report is None or not text.strip():
        return []
    text = text.strip()
    if len(text) > 2 and text.startswith("/") and text.endswith("/"):
        try:
            rx = re.compile(text[1:-1], re.I)
        except re.error:
            return []
        test = lambda *s: any(rx.search(x or "") for x in s)
    else:
        low = text.lower()
        test = lambda *s: any(low in (x or "").lower() for x in s)
    out = []
    if hierarchy is not None:
        for g in hierarchy.groups.values():
            if g.id != ROOT and test(g.label, g.id):
                out.append(("layer", g.id, g.label, f"{g.kind}, {g.n_ops} ops"))
    for v in report.variables:
        if test(v.name, v.tf_name):
            out.append(("variable", f"var:{v.name}", v.name, f"{v.tf_name} · {v.status}"))
    ops = []
    drawn: set[str] = set()
    for o in report.graph.ops:
        if o.is_variable:
            continue
        # An op drawn as another node (a weight's placeholder and plain reads are the weight,
        # a slice's packed bounds its slice) is found as that node, listed once, as the graph
        # draws it; a weight by its variable row.
        node = hierarchy.alias.get(o.id, o.id) if hierarchy is not None else o.id
        if node in drawn or node.startswith("var:"):
            continue
        shown = hierarchy.display_name(o.id) if hierarchy is not None else o.label or o.name
        if not test(shown, o.name, o.type, o.id):
            continue
        drawn.add(node)
        held = hierarchy.ops.get(node, o) if hierarchy is not None else o
        where = hierarchy.where(node) if hierarchy is not None else ""
        ops.append(("op", node, shown, f"{held.type} in {where}" if where else held.type, held.name))
    # rows that would read alike (two ``strided_slice`` Packs in one loop body) say which op
    # each is, by TensorFlow's name within its box
    alike = Counter((shown, detail) for _, _, shown, detail, _ in ops)
    for kind, node, shown, detail, tf in ops:
        if alike[(shown, detail)] > 1:
            detail = f"{detail} · {tf.rsplit('/', 1)[-1]}"
        out.append((kind, node, shown, detail))
    return out


class SearchPanel(QWidget):
    """Find layers, variables and ops of the analysis shown; a hit is selected in ``view``
    or in ``variables``."""

    def __init__(self, analysis: AnalysisController, view: GraphView, variables: VariablesPanel, parent=None):
        super().__init__(parent)
        self.analysis, self.view, self.variables = analysis, view, variables
        self.field = QLineEdit(placeholderText="Find layers, variables and ops: name, type or /regex/")
        self.field.setClearButtonEnabled(True)
        self.field.textChanged.connect(self.refresh)
        self.list = QTreeWidget()
        self.list.setHeaderLabels(["kind", "name", "type / where"])
        self.list.setRootIsDecorated(False)
        self.list.setUniformRowHeights(True)
        self.list.setAlternatingRowColors(True)
        self.list.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.list.header().resizeSection(0, 70)
        self.list.header().resizeSection(1, 260)
        self.list.itemActivated.connect(lambda it, _c: self.go(it))
        self.list.itemClicked.connect(lambda it, _c: self.go(it))
        self.field.returnPressed.connect(self._enter)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.setSpacing(2)
        lay.addWidget(self.field)
        lay.addWidget(self.list, 1)

    def refresh(self) -> None:
        self.list.clear()
        hits = search(self.analysis.report, self.view.hierarchy, self.field.text())
        for kind, nid, name, detail in hits[:MAX_RESULTS]:
            it = QTreeWidgetItem([kind, name, detail])
            it.setForeground(0, QBrush(QColor(KIND_COLOR[kind])))
            it.setToolTip(1, f"{name}\nTensorFlow's name: {nid}" if kind == "op" and nid != name else name)
            it.setData(0, Qt.ItemDataRole.UserRole, (kind, nid))
            self.list.addTopLevelItem(it)
        more = len(hits) - MAX_RESULTS
        if more > 0:
            self.list.addTopLevelItem(QTreeWidgetItem(["", f"… {more} more: type more of the name", ""]))

    def _enter(self) -> None:
        first = self.list.topLevelItem(0)  # None when the list is empty
        if first is not None:
            self.list.setCurrentItem(first)
            self.go(first)

    def go(self, it: QTreeWidgetItem) -> None:
        data = it.data(0, Qt.ItemDataRole.UserRole)
        if not data:
            return
        kind, nid = data
        if kind == "variable":
            self.variables.select_name(nid[4:])
        elif kind == "op":
            self.view.select_op(nid, background=True)
        else:
            select_group(self.view, nid)


def select_group(view, gid: str) -> bool:
    """Reveal the group ``gid`` (open the groups around it) and select its box."""
    if view.hierarchy is None or gid not in view.hierarchy.groups:
        return False
    chain = view.hierarchy.group_chain(gid)[:-1]
    if not set(chain) <= view.expanded or (gid not in view.node_items and gid not in view.frames):
        view.expanded.update(chain)
        view.rebuild()
    item = view.node_items.get(gid) or view.frames.get(gid)
    if item is None:
        return False
    view.scene().clearSelection()
    if gid in view.node_items:
        item.setSelected(True)
    view.framing.touched()
    view.centerOn(item.sceneBoundingRect().center())
    return True


class GraphKeys(QObject):
    """Arrows, +/-, Enter and Backspace on the graph view."""

    def __init__(self, view):
        super().__init__(view)
        self.view = view
        view.installEventFilter(self)

    def selected(self) -> str | None:
        sel = [i for i in self.view.scene().selectedItems() if hasattr(i, "node_id")]
        return sel[0].node_id if sel else None

    def neighbours(self, nid: str, forward: bool) -> list[str]:
        """Drawn nodes one edge away: consumers (``forward``) or inputs."""
        out = []
        for a, b in self.view.edge_routes:
            if forward and a == nid and b in self.view.node_items:
                out.append(b)
            elif not forward and b == nid and a in self.view.node_items:
                out.append(a)
        # left to right on screen, so repeated presses are predictable
        return sorted(set(out), key=lambda n: self.view.node_items[n].sceneBoundingRect().center().x())

    def move(self, forward: bool, step: int = 0) -> bool:
        v = self.view
        nid = self.selected()
        if nid is None:
            if not v.node_items:
                return False
            nid = next(iter(v.node_items))
            target = nid
        else:
            ns = self.neighbours(nid, forward)
            if not ns:
                return False
            target = ns[step % len(ns)]
        v.scene().clearSelection()
        v.node_items[target].setSelected(True)
        v.ensureVisible(v.node_items[target], 60, 60)
        return True

    def eventFilter(self, obj, e) -> bool:  # noqa: N802 - Qt's name
        if e.type() != QEvent.Type.KeyPress or self.view.hierarchy is None:
            return False
        k, v = e.key(), self.view
        if k in (Qt.Key.Key_Down, Qt.Key.Key_Right):
            return self.move(True)
        if k in (Qt.Key.Key_Up, Qt.Key.Key_Left):
            return self.move(False)
        if k in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            v.zoom_by(1.25)
            return True
        if k in (Qt.Key.Key_Minus, Qt.Key.Key_Underscore):
            v.zoom_by(0.8)
            return True
        nid = self.selected()
        if k in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and nid in v.hierarchy.groups and nid not in v.expanded:
            v.toggle_group(nid)
            return True
        if k == Qt.Key.Key_Backspace and nid:
            gid = nid if nid in v.hierarchy.groups and nid in v.expanded else v.hierarchy.parent.get(nid)
            if gid and gid != ROOT:
                v.toggle_group(gid)
                if gid in v.node_items:
                    v.scene().clearSelection()
                    v.node_items[gid].setSelected(True)
                return True
        return False
