"""Search results (layers, variables, ops, with a kind column) and the graph's keys."""

from __future__ import annotations

from conftest import drawn
from PySide6.QtCore import Qt

from tfviz.report import GraphDoc, GraphEdge, GraphOp, Report, VariableReport


def _report() -> Report:
    ops = [
        GraphOp("var:w", "w", "VarHandleOp", "", on_path=True, is_variable=True),
        GraphOp("dense/read", "dense/read", "ReadVariableOp", "dense", on_path=True),
        GraphOp("dense/MatMul", "dense/MatMul", "MatMul", "dense", on_path=True),
        GraphOp("dense/Relu", "dense/Relu", "Relu", "dense", on_path=True),
        GraphOp("__target__", "loss", "Target", "", on_path=True),
    ]
    e = lambda a, b: GraphEdge(a, b, 0, 0, "float32", [2], "passes")
    edges = [
        e("var:w", "dense/read"),
        e("dense/read", "dense/MatMul"),
        e("dense/MatMul", "dense/Relu"),
        e("dense/Relu", "__target__"),
    ]
    return Report(
        script="/x/m.py",
        target="loss",
        ok=True,
        graph=GraphDoc(ops=ops, edges=edges),
        variables=[VariableReport("w", "dense/w", "float32", [2], "connected", None, 1.0)],
    )


def test_search_lists_layers_variables_and_ops(qtbot, window):
    r = _report()
    window.analysis.report = r
    window.show_report(r)
    panel = window.search_panel
    panel.field.setText("dense")
    rows = [
        (panel.list.topLevelItem(i).text(0), panel.list.topLevelItem(i).text(1))
        for i in range(panel.list.topLevelItemCount())
    ]
    kinds = {k for k, _ in rows}
    assert kinds == {"layer", "variable", "op"}, rows
    # an op by the name its box shows, with the layer that holds it; TensorFlow's in the tooltip
    assert ("op", "MatMul") in rows and ("variable", "w") in rows
    items = [panel.list.topLevelItem(i) for i in range(panel.list.topLevelItemCount())]
    op_row = next(it for it in items if it.text(1) == "Relu")
    assert op_row.text(2) == "Relu in dense" and "dense/Relu" in op_row.toolTip(1)
    panel.go(op_row)  # its layer opens in the background, then the op is selected
    drawn(window.graph.view)
    assert [i.node_id for i in window.graph.view.scene().selectedItems()] == ["dense/Relu"]
    panel.field.setText("/^zzz/")
    assert panel.list.topLevelItemCount() == 0


def test_keys_move_along_edges_zoom_and_collapse(qtbot, window):
    r = _report()
    window.analysis.report = r
    window.show_report(r)
    view = window.graph.view
    assert view.select_op("dense/MatMul", center=False)
    sel = lambda: [i.node_id for i in view.scene().selectedItems()]
    qtbot.keyClick(view, Qt.Key_Down)
    assert sel() == ["dense/Relu"]
    qtbot.keyClick(view, Qt.Key_Up)
    assert sel() == ["dense/MatMul"]
    s = view.transform().m11()
    qtbot.keyClick(view, Qt.Key_Plus)
    assert view.transform().m11() > s
    qtbot.keyClick(view, Qt.Key_Minus)
    gid = view.hierarchy.parent["dense/MatMul"]
    qtbot.keyClick(view, Qt.Key_Backspace)  # collapse the layer around the selection
    assert gid not in view.expanded and sel() == [gid]
    qtbot.keyClick(view, Qt.Key_Return)  # and open it again
    assert gid in view.expanded


def test_search_lists_each_drawn_node_once_and_no_two_rows_alike(qtbot, window):
    """``W_aux`` gave five rows that looked the same (the weight's placeholders in each loop
    body and branch, all drawn as the weight), ``while`` four: a node is found once, as the
    graph draws it, and rows that would read alike say which op each is."""
    from collections import Counter

    from conftest import EXAMPLES, run_analysis

    from app.panels.search import search

    run_analysis(qtbot, window, EXAMPLES / "kind_zero_cond_in_loop.py")
    report, h = window.analysis.report, window.graph.view.hierarchy
    assert report is not None and h is not None
    assert [(k, name) for k, _, name, _ in search(report, h, "W_aux")] == [("variable", "W_aux")]
    for text in ("while", "W_", "Placeholder", "/./"):
        rows = search(report, h, text)
        assert rows, text
        assert max(Counter(node for _, node, _, _ in rows).values()) == 1, text
        assert max(Counter((k, name, detail) for k, _, name, detail in rows).values()) == 1, text
        for _, node, _, _ in rows:  # every row leads to a node the graph draws
            assert node in h.groups or h.alias.get(node, node) == node, (text, node)
