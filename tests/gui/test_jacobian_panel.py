"""The Jacobian panel in the real window with the real worker's kept session.

The seed-3 example: h = xW + b, y = tanh(h). J(y, W) has shape (1,3,4,3) and is
zero unless the output's column equals W's column (y_j depends on W[:, j] only).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import EXAMPLES, run_analysis
from PySide6.QtCore import QPoint
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest

from app.jacobian import saving
from app.jacobian.menu import variables_menu
from tfviz.jacobian.png import colorize

SEED3 = EXAMPLES / "seed3_chain_rule_split.py"
WAIT_MS = 120_000


@pytest.fixture
def seed3(qtbot, window):
    if window.analysis.script != str(SEED3) or window.analysis.report is None:
        run_analysis(qtbot, window, SEED3)
    assert window.analysis.report is not None and window.jacobian.alive()
    window.jacobian.budget_mb = None
    return window


def wait_answer(qtbot, c) -> None:
    qtbot.waitUntil(lambda: c.current is None and c.pending is None, timeout=WAIT_MS)


def actions(menu) -> dict:
    out = {}
    for a in menu.actions():
        out[a.text()] = a
        if a.menu() is not None:
            out.update({f"{a.text()} > {b.text()}": b for b in a.menu().actions()})
    return out


def node_pos(view, node_id: str) -> QPoint:
    item = view.reveal(node_id)
    view.centerOn(item)
    return view.mapFromScene(item.sceneBoundingRect().center())


def hover(heat, row: int, col: int) -> None:
    """Move the mouse over an element (inside the window: QTest's events go through it)."""
    p = heat.element_center(row, col).toPoint()
    assert heat.window().rect().contains(heat.mapTo(heat.window(), p)), "element outside the window"
    QTest.mouseMove(heat.viewport(), p + QPoint(1, 0))
    QTest.mouseMove(heat.viewport(), p)


def hover_until(qtbot, heat, row: int, col: int, cond) -> None:
    """Hover the element until ``cond()``: the view may still be settling after a resize."""

    def moved() -> bool:
        hover(heat, row, col)
        return cond()

    qtbot.waitUntil(moved, timeout=5000)


def test_open_from_node_hover_and_colours(qtbot, seed3):
    w, c = seed3, seed3.jacobian
    menu = w.graph.view.context_menu(node_pos(w.graph.view, "y"))
    acts = actions(menu)
    assert "Jacobian of this w.r.t. … > W" in acts and "Jacobian of this w.r.t. … > b" in acts
    acts["Jacobian of this w.r.t. … > W"].trigger()
    wait_answer(qtbot, c)
    assert w.docks["Jacobian"].isVisible() and c.panel.stack.currentWidget() is c.panel.single
    heat = c.panel.single
    values = saving.values_of(c.panel.shown)
    assert values.shape == (1, 3, 4, 3)
    m = heat.matrix
    assert m.shape == (3, 12)
    cols = np.arange(12) % 3
    assert np.all(m[np.arange(3)[:, None] != cols[None, :]] == 0)  # y_j reads W[:, j] only
    assert np.all(m[np.arange(3)[:, None] == cols[None, :]] != 0)
    qtbot.wait(50)
    # output 1 = y[0, 1]; input 7 = W[2, 1]
    hover_until(qtbot, heat, 1, 7, lambda: "W[2, 1]" in c.panel.readout.text())
    assert c.panel.readout.text().startswith(f"∂ y[0, 1] / ∂ W[2, 1] = {m[1, 7]:.6g}")
    img = heat.grab().toImage()
    lo, hi = np.unravel_index(np.argmin(m), m.shape), np.unravel_index(np.argmax(m), m.shape)
    for r, col in {lo, hi, (0, 1), (2, 11), (1, 7)}:
        p = heat.element_center(int(r), int(col)).toPoint()
        got, want = img.pixelColor(p), heat.color_of(float(m[r, col]))
        assert (
            max(abs(got.red() - want.red()), abs(got.green() - want.green()), abs(got.blue() - want.blue()))
            <= 6
        ), (r, col, got.name(), want.name())
    assert heat.color_of(float(m.max())).red() > 150 and heat.color_of(float(m.min())).blue() > 150
    assert img.pixelColor(heat.element_center(0, 1).toPoint()).name() in ("#f7f7f7", "#f6f6f6", "#f8f8f8")
    c.panel.log_box.setChecked(True)  # log magnitude: zeros blank, the colour bar says log10
    assert "log10" in heat.bar.axis.labelText
    c.panel.log_box.setChecked(False)


def test_two_selected_nodes_and_variables_menu(qtbot, seed3):
    w, c = seed3, seed3.jacobian
    view = w.graph.view
    view.scene().clearSelection()
    for nid in ("y", "h"):
        view.reveal(nid).setSelected(True)
    acts = actions(view.context_menu(node_pos(view, "y")))
    assert "Jacobian of this w.r.t. h (selected)" in acts
    acts = actions(view.context_menu(node_pos(view, "h")))
    assert "Jacobian of y (selected) w.r.t. this" in acts
    view.scene().clearSelection()
    item = w.variables.topLevelItem(1)
    assert item.text(1) == "b"
    menu = variables_menu(c, w.variables, w.variables.visualItemRect(item).center())
    actions(menu)["Jacobian of the loss w.r.t. this"].trigger()
    wait_answer(qtbot, c)
    assert c.panel.shown.of.kind == "target" and saving.values_of(c.panel.shown).shape == (3,)


def test_chain_split_four_heatmaps(qtbot, seed3):
    c = seed3.jacobian
    c.open("y", "W", "h")
    wait_answer(qtbot, c)
    split = c.panel.shown
    assert c.panel.stack.currentIndex() == 2
    assert [h.matrix.shape for h in c.panel.parts] == [(3, 3), (3, 12), (3, 12), (3, 12), (3, 12)]
    np.testing.assert_allclose(c.panel.parts[2].matrix, c.panel.parts[3].matrix, atol=1e-6)
    # the fifth heatmap: the difference itself, element by element
    np.testing.assert_allclose(
        c.panel.parts[4].matrix, c.panel.parts[2].matrix - c.panel.parts[3].matrix, atol=1e-7
    )
    assert np.abs(c.panel.parts[4].matrix).max() == pytest.approx(split.max_abs_diff, abs=1e-7)
    np.testing.assert_allclose(
        c.panel.parts[0].matrix @ c.panel.parts[1].matrix, c.panel.parts[3].matrix, atol=1e-6
    )
    assert split.max_abs_diff < 1e-5
    text = c.panel.message.text()
    assert f"= {split.max_abs_diff:.3g}" in text and "chain rule holds" in text


def test_cancel_then_compute_again(qtbot, seed3):
    c = seed3.jacobian
    c.open("y", "W", "h")
    assert c.panel.progress_row.isVisibleTo(c.panel) and c.panel.cancel_btn.isEnabled()
    c.cancel()  # reaches the worker before its first chunk
    wait_answer(qtbot, c)
    assert "Cancelled." in c.panel.message.text()
    assert not c.panel.progress_row.isVisibleTo(c.panel)
    c.open("y", "b")
    wait_answer(qtbot, c)
    assert saving.values_of(c.panel.shown).shape == (1, 3, 3)


def test_too_big_offers_slices(qtbot, seed3):
    c = seed3.jacobian
    c.budget_mb = 100 / 2**20  # 100 bytes: J(y, W) takes 144
    c.open("y", "W")
    wait_answer(qtbot, c)
    text = c.panel.message.text()
    assert "Too big." in text and "144 B" in text and len(c.panel.offers) >= 1
    k = next(i for i, o in enumerate(c.panel.offers) if o.get("in_range") not in (None, [0, 12]))
    offer = c.panel.offers[k]
    c.panel._link(f"offer:{k}")  # what clicking the link does
    wait_answer(qtbot, c)
    j = c.panel.shown
    assert j.out_range == offer["out_range"] and j.in_range == offer["in_range"]
    (o0, o1), (i0, i1) = offer["out_range"], offer["in_range"]
    n_out, n_in = o1 - o0, i1 - i0
    assert c.panel.single.matrix.shape == (n_out, n_in)
    qtbot.wait(50)
    o, i = offer["out_range"][1] - 1, offer["in_range"][1] - 1
    idx = lambda flat, shape: ", ".join(str(int(v)) for v in np.unravel_index(flat, shape))
    want = f"∂ y[{idx(o, (1, 3))}] / ∂ W[{idx(i, (4, 3))}] = "
    hover_until(qtbot, c.panel.single, n_out - 1, n_in - 1, lambda: c.panel.readout.text().startswith(want))
    assert f"row {o}, column {i}" in c.panel.readout.text()


def test_export_files_equal_the_values(qtbot, seed3, tmp_path):
    c = seed3.jacobian
    c.open("y", "W")
    wait_answer(qtbot, c)
    j = c.panel.export_target()
    values = saving.values_of(j)
    np.testing.assert_array_equal(np.load(saving.save(j, str(tmp_path / "j.npy"))), values)
    csv = np.loadtxt(saving.save(j, str(tmp_path / "j.csv")), delimiter=",", dtype=np.float32)
    np.testing.assert_array_equal(csv, values.reshape(3, 12))
    img = QImage(saving.save(j, str(tmp_path / "j.png")))
    x, y, w, h = (int(v) for v in img.text("tfviz:matrix").split(","))  # the matrix in the figure
    k = w // 12
    assert (w, h) == (12 * k, 3 * k) and img.width() > x + w and img.height() > y + h
    rgb = colorize(values.reshape(3, 12))
    for r in range(3):
        for col in range(12):
            px = img.pixelColor(x + col * k + k // 2, y + r * k + k // 2)
            assert (px.red(), px.green(), px.blue()) == tuple(int(v) for v in rgb[r, col])


def test_no_path_and_not_found(qtbot, seed3):
    c = seed3.jacobian
    c.open("MatMul", "b")
    wait_answer(qtbot, c)
    assert c.panel.shown is None and "path" in c.panel.message.text().lower()
    c.open("y", "nonesuch")
    wait_answer(qtbot, c)
    assert "nonesuch" in c.panel.message.text()


def test_cut_names_the_op_and_selects_it(qtbot, window):
    run_analysis(qtbot, window, EXAMPLES / "kind_stop_gradient.py")
    c = window.jacobian
    c.open("target", "teacher")
    wait_answer(qtbot, c)
    text = c.panel.message.text()
    assert "href='op:" in text, text
    op = text.split("href='op:", 1)[1].split("'", 1)[0]
    c.panel._link(f"op:{op}")  # what clicking the op's name does
    sel = [i.node_id for i in window.graph.view.scene().selectedItems() if hasattr(i, "node_id")]
    assert sel == [op]


def test_display_names_are_shown_and_the_request_names_asked(qapp):
    """The fields show the graph's names; what is asked is the request name; a name two
    tensors would share shows neither (each keeps its own)."""
    from app.jacobian.panel import JacobianPanel

    p = JacobianPanel()
    p.set_display_names({"net_1/d_1/BiasAdd": "d › BiasAdd", "a/x": "same", "b/x": "same", "w": "w"})
    p.set_names(["net_1/d_1/BiasAdd", "a/x", "b/x", "w"])
    p.set_request("net_1/d_1/BiasAdd", "w")
    assert p.of.currentText() == "d › BiasAdd" and p.request() == ("net_1/d_1/BiasAdd", "w", "")
    assert [p.of.itemText(i) for i in range(p.of.count())] == ["d › BiasAdd", "a/x", "b/x", "w"]
    p.of.setEditText("a/x")  # typed: taken as it is
    assert p.request()[0] == "a/x"
