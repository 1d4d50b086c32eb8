"""The graph's own right-click entries: Show path, Expand / Expand subtree / Collapse, Copy name.

They live with the graph (not with the Jacobian panel, which appends its entries after
these) so that every node, collapsed box and open group frame gets the same menu, and the
entries work on a bare :class:`~app.graph.view.GraphView` without a window.
"""

from __future__ import annotations

from PySide6.QtWidgets import QApplication, QMenu

from tfviz.structure.hierarchy import ROOT

from .items import FrameItem, NodeItem


def target_at(view, pos) -> tuple[str, str] | None:
    """What a right-click at ``pos`` (viewport coordinates) is on: ``("node", id)`` for a
    node or collapsed box, ``("frame", group id)`` for an open group's frame, or None."""
    items = view.items_at(pos)
    node = next((i for i in items if isinstance(i, NodeItem)), None)
    if node is not None:
        return "node", node.node_id
    frame = next((i for i in items if isinstance(i, FrameItem)), None)
    return ("frame", frame.group_id) if frame is not None else None


def subtree(h, gid: str) -> set[str]:
    """``gid`` and every group below it."""
    out, stack = set(), [gid]
    while stack:
        g = stack.pop()
        out.add(g)
        stack.extend(c for c in h.groups[g].children if c in h.groups)
    return out


def expand_subtree(view, gid: str, background: bool = False) -> None:
    """Open ``gid`` and every group inside it, down to the ops (``background``: see
    :meth:`GraphView.rebuild <app.graph.view.GraphView.rebuild>`, as the menu does)."""
    if view.hierarchy is None or gid not in view.hierarchy.groups:
        return
    view.expanded = set(view.expanded) | subtree(view.hierarchy, gid) | set(view.hierarchy.group_chain(gid))
    view.rebuild(keep=gid, background=background)


def collapse(view, gid: str, background: bool = False) -> None:
    """Close ``gid`` (and what is open inside it) back into one box."""
    if view.hierarchy is not None and gid != ROOT and gid in view.expanded:
        view.toggle_group(gid, background=background)


def full_name(view, node_id: str) -> str:
    """The name a user pastes into a search or a bug report: the one every panel shows (a
    box's title, a variable's or captured tensor's Python path, an op's title)."""
    return view.hierarchy.display_name(node_id)


def tf_name(view, node_id: str) -> str | None:
    """The op's TensorFlow name, where it differs from the name shown; None otherwise."""
    op = view.hierarchy.ops.get(view.hierarchy.alias.get(node_id, node_id))
    if op is None or op.is_variable or op.name == full_name(view, node_id):
        return None
    return op.name


def copy_name(view, node_id: str) -> None:
    QApplication.clipboard().setText(full_name(view, node_id))


def add_graph_actions(menu: QMenu, view, pos) -> str | None:
    """Fill ``menu`` with the graph's entries for what is under ``pos``; the node or group
    id it is about (None: nothing under the pointer, nothing added)."""
    hit = target_at(view, pos) if view.hierarchy is not None else None
    if hit is None:
        return None
    what, nid = hit
    h = view.hierarchy
    if hasattr(view, "pathRequested"):
        menu.addAction("Show path", lambda: view.pathRequested.emit(nid))
    if nid in h.groups:  # a collapsed box or an open frame
        if nid not in view.expanded:
            menu.addAction("Expand", lambda: view.toggle_group(nid, background=True))
        kids = [c for c in h.groups[nid].children if c in h.groups]
        if kids or nid not in view.expanded:
            menu.addAction("Expand subtree", lambda: expand_subtree(view, nid, background=True))
        if nid in view.expanded:
            menu.addAction(f"Collapse {h.groups[nid].label}", lambda: collapse(view, nid, background=True))
    else:  # an op, variable or the target: its innermost open group can be closed
        chain = [g for g in h.chain.get(h.alias.get(nid, nid), []) if g != ROOT]
        if chain:
            parent = chain[-1]
            menu.addAction(
                f"Collapse {h.groups[parent].label}", lambda: collapse(view, parent, background=True)
            )
    menu.addAction("Copy name", lambda: copy_name(view, nid))
    if (tf := tf_name(view, nid)) is not None:
        menu.addAction("Copy TensorFlow name", lambda: QApplication.clipboard().setText(tf))
    menu.addSeparator()
    return nid
