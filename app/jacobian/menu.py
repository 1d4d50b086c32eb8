"""Where the Jacobian panel is opened from: the graph's and the Variables list's right-click menus.

:func:`add_graph_entries` is the graph view's menu hook (:meth:`app.graph.view.GraphView.context_menu`):
it appends the Jacobian entries for the tensor or edge under the pointer to the graph's own.

Names are the worker's: a graph node id is the tensor (``:k`` for output k other
than 0), a variable is its Variables-panel name (node ``var:NAME``), the target
node is ``target``.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QPainterPathStroker
from PySide6.QtWidgets import QInputDialog, QMenu

from tfviz.report import GraphEdge, Report

#: Variables listed directly in the "w.r.t." submenu; more go through "Other…".
MAX_LISTED = 25


def tensor_name(report: Report, node_id: str, output: int = 0) -> str:
    """The request name of a graph node's output (``var:W`` -> ``W``, the target -> ``target``)."""
    if node_id.startswith("var:"):
        return node_id[4:]
    op = next((o for o in report.graph.ops if o.id == node_id), None)
    if op is not None and op.type == "Target":
        return "target"
    return node_id if not output else f"{node_id}:{output}"


#: the last report's predecessors: the menu asks for them on every right-click
_preds: tuple[list[GraphEdge], dict[str, list[str]]] | None = None


def _predecessors(report: Report) -> dict[str, list[str]]:
    global _preds
    if _preds is None or _preds[0] is not report.graph.edges:
        preds: dict[str, list[str]] = {}
        for e in report.graph.edges:
            if not e.back:
                preds.setdefault(e.dst, []).append(e.src)
        _preds = (report.graph.edges, preds)
    return _preds[1]


def upstream(report: Report, node_id: str) -> list[str]:
    """Graph node ids the node depends on (nearest first), from the report's edges."""
    preds = _predecessors(report)
    seen, order, frontier = {node_id}, [], [node_id]
    while frontier:
        nxt = []
        for n in frontier:
            for p in preds.get(n, ()):
                if p not in seen:
                    seen.add(p)
                    order.append(p)
                    nxt.append(p)
        frontier = nxt
    return order


def add_jacobian_actions(
    menu: QMenu, controller, node_id: str, output: int = 0, selected: list[str] | None = None
) -> None:
    """“Jacobian of this w.r.t. ▸ …” for the tensor ``node_id:output``; with two nodes
    selected, the downstream one w.r.t. the other; with a Jacobian shown, split it here."""
    report = controller.analysis.report
    if report is None:
        return
    if node_id.startswith("var:"):
        menu.addAction(
            "Jacobian of the loss w.r.t. this",
            lambda: controller.open_first("target", tensor_name(report, node_id)),
        )
        return
    this = tensor_name(report, node_id, output)
    ups = upstream(report, node_id)
    sub = menu.addMenu("Jacobian of this w.r.t. …")
    variables = [u for u in ups if u.startswith("var:")]
    for v in variables[:MAX_LISTED]:
        sub.addAction(v[4:], lambda v=v: controller.open_first(this, v[4:]))  # type: ignore[misc]
    tensors = [tensor_name(report, u) for u in ups if not u.startswith("var:")]
    if variables or tensors:
        sub.addSeparator()
        sub.addAction(
            "Other variable or upstream tensor…",
            lambda: _pick(controller, this, [v[4:] for v in variables] + tensors),
        )
    else:
        sub.setEnabled(False)
        sub.setTitle("Jacobian of this w.r.t. … (nothing upstream)")
    other = [s for s in (selected or []) if s != node_id]
    if len(other) == 1:
        a = other[0]
        if a in ups:  # the other one is upstream: d this / d other
            menu.addAction(
                f"Jacobian of this w.r.t. {tensor_name(report, a)} (selected)",
                lambda: controller.open_first(this, tensor_name(report, a)),
            )
        elif node_id in upstream(report, a) and not a.startswith("var:"):
            menu.addAction(
                f"Jacobian of {tensor_name(report, a)} (selected) w.r.t. this",
                lambda: controller.open_first(tensor_name(report, a), this),
            )
    shown = controller.last_request
    if shown and shown["of"] != this and shown["wrt"] != this:
        menu.addAction(
            f"Split J({shown['of']}, {shown['wrt']}) through this (chain rule)",
            lambda: controller.open_first(shown["of"], shown["wrt"], this),
        )


def _pick(controller, of: str, names: list[str]) -> None:
    name, ok = QInputDialog.getItem(controller.panel, "Jacobian", f"∂ {of} / ∂ …", names, 0, True)
    if ok and name.strip():
        controller.open_first(of, name.strip())


def edge_at(view, scene_pos: QPointF) -> tuple[str, str] | None:
    """The drawn edge (src, dst) under a scene position, within a few pixels."""
    stroker = QPainterPathStroker()
    stroker.setWidth(8.0 / max(view.transform().m11(), 1e-3))
    for ab, path in view.edge_routes.items():
        if path.controlPointRect().adjusted(-8, -8, 8, 8).contains(scene_pos) and stroker.createStroke(
            path
        ).contains(scene_pos):
            return ab
    return None


def add_graph_entries(controller, menu: QMenu, view, pos) -> None:
    """The Jacobian's entries of the graph's right-click menu at ``pos`` (viewport
    coordinates): for the node under the pointer, or else for the edge."""
    from ..graph.items import NodeItem

    report = controller.analysis.report
    if report is None or view.hierarchy is None:
        return
    selected = [i.node_id for i in view.scene().selectedItems() if isinstance(i, NodeItem)]
    node = next((i for i in view.items_at(pos) if isinstance(i, NodeItem)), None)
    if node is not None and node.kind != "group":
        add_jacobian_actions(menu, controller, node.node_id, selected=selected)
    elif node is None:
        ab = edge_at(view, view.mapToScene(pos))
        if ab is not None and ab[0] in view.hierarchy.ops:
            e = next((e for e in report.graph.edges if e.src == ab[0] and e.dst == ab[1]), None)
            add_jacobian_actions(menu, controller, ab[0], e.src_output if e else 0)


def _install(widget, make) -> None:
    """Right-click on ``widget`` shows ``make(pos)``'s menu, when it builds one."""
    widget.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)

    def show(pos) -> None:
        menu = make(pos)
        if menu is not None:
            menu.exec(widget.viewport().mapToGlobal(pos))

    widget.customContextMenuRequested.connect(show)


def variables_menu(controller, variables, pos) -> QMenu | None:
    """Right-click a variable: “Jacobian of the loss w.r.t. this”."""
    from ..panels.docks import ROLE

    it = variables.itemAt(pos)
    if it is None or it.data(0, ROLE) is None or controller.analysis.report is None:
        return None
    name = it.data(0, ROLE).name
    menu = QMenu(variables)
    menu.addAction("Jacobian of the loss w.r.t. this", lambda: controller.open_first("target", name))
    return menu


def install_variables_menu(controller, variables) -> None:
    _install(variables, lambda pos: variables_menu(controller, variables, pos))
