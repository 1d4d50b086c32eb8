"""The graph's right-click menu: show path, expand, expand subtree,
collapse, copy name, and the Jacobian entries after them."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from app.graph.context_menu import full_name, subtree
from tests.gui.test_layer_view import SG, _open


def _menu_at(qtbot, window, item):
    view = window.graph.view
    view.centerOn(item)
    qtbot.wait(20)
    pos = view.mapFromScene(item.sceneBoundingRect().center())
    menu = view.context_menu(pos)
    assert menu is not None
    return {a.text(): a for a in menu.actions() if not a.isSeparator()}


def _collapsed_layer(view) -> str:
    groups = view.hierarchy.groups
    return next(
        g for g in view.node_items if g in groups and groups[g].kind == "layer" and g not in view.expanded
    )


def _built(qtbot, view) -> None:
    qtbot.waitUntil(lambda: not view.building(), timeout=30_000)


def test_a_collapsed_layer_expands_and_its_subtree_opens(qtbot, window):
    view = _open(qtbot, window, SG)
    view.show_path(None)
    gid = _collapsed_layer(view)
    acts = _menu_at(qtbot, window, view.node_items[gid])
    assert {"Show path", "Expand", "Expand subtree", "Copy name"} <= set(acts)
    assert not any(t.startswith("Collapse") for t in acts)  # it is closed already
    acts["Expand subtree"].trigger()
    assert view.building()  # the menu's change is drawn off the event loop's critical path
    _built(qtbot, view)
    assert subtree(view.hierarchy, gid) <= view.expanded
    assert gid in view.frames and gid not in view.node_items  # drawn open, as a frame


def test_an_op_collapses_its_group_and_copies_the_name_the_graph_shows(qtbot, window):
    view = _open(qtbot, window, SG)
    view.show_path(None)
    view.reveal("StopGradient")
    h = view.hierarchy
    parent = [g for g in h.chain["StopGradient"] if g in h.groups and h.groups[g].kind != "root"]
    acts = _menu_at(qtbot, window, view.node_items["StopGradient"])
    assert any(t.startswith("Jacobian of this") for t in acts)  # the Jacobian entries stay
    acts["Copy name"].trigger()
    shown = h.display_name("StopGradient")
    assert QApplication.clipboard().text() == shown == full_name(view, "StopGradient")
    assert "Copy TensorFlow name" not in acts  # the same name: offered once
    if parent:  # inside a layer or function: that group closes back into a box
        label = h.groups[parent[-1]].label
        acts[f"Collapse {label}"].trigger()
        _built(qtbot, view)
        assert parent[-1] not in view.expanded and parent[-1] in view.node_items
        assert "StopGradient" not in view.node_items


def test_a_variable_copies_its_python_path(qtbot, window):
    view = _open(qtbot, window, SG)
    view.show_path(None)
    var = next(n for n in view.node_items if n.startswith("var:"))
    acts = _menu_at(qtbot, window, view.node_items[var])
    acts["Copy name"].trigger()
    assert QApplication.clipboard().text() == var[4:]
    acts["Show path"].trigger()
    qtbot.wait(20)
    assert view.path is not None and view.path.start == var


def test_an_open_frame_collapses_from_its_menu(qtbot, window):
    view = _open(qtbot, window, SG)
    view.show_path(None)
    gid = _collapsed_layer(view)
    view.toggle_group(gid)
    frame = view.frames[gid]
    view.centerOn(frame)
    qtbot.wait(20)
    r = frame.sceneBoundingRect()
    pos = view.mapFromScene(r.topLeft() + (r.bottomRight() - r.topLeft()) * 0.02)  # the frame's corner
    menu = view.context_menu(pos)
    acts = {a.text(): a for a in menu.actions() if not a.isSeparator()}
    label = view.hierarchy.groups[gid].label
    assert f"Collapse {label}" in acts and "Expand" not in acts
    acts[f"Collapse {label}"].trigger()
    _built(qtbot, view)
    assert gid not in view.expanded and gid in view.node_items
