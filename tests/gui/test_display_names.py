"""One name per thing: the graph, Problems, the path, Search and Copy name all give a
captured tensor and a variable the same display name; TensorFlow's name is secondary."""

from __future__ import annotations

from conftest import EXAMPLES, run_analysis

from app.graph.context_menu import full_name, tf_name
from app.panels.search import search

SEED2 = EXAMPLES / "seed2_frozen_copy.py"


def test_every_panel_names_the_frozen_copy_and_the_variable_alike(qtbot, window):
    run_analysis(qtbot, window, SEED2)
    assert window.analysis.last_error is None, window.analysis.last_error
    view = window.graph.view
    h = view.hierarchy
    copy = "model.layers[0].weights2"  # the attribute the script holds the frozen copy at
    (op_id,) = [o for o, op in h.ops.items() if op.label == copy]
    assert h.ops[op_id].name != copy  # TensorFlow calls it something else (``.../MatMul/b``)
    # the graph's box
    assert h.title(op_id) == h.display_name(op_id) == copy
    # ... whole: its box is widened to hold it, not elided
    from PySide6.QtGui import QFontMetricsF

    from app.graph.items import _FONT

    view.reveal(op_id)
    box = view.node_items[op_id]
    assert box._rect.width() >= QFontMetricsF(_FONT).horizontalAdvance(copy) + 30
    # Details: its display name as the header, TensorFlow's name as secondary text, and the
    # layers that hold it as the graph titles them (not the name scope)
    assert view.select_op(op_id)
    details = window.details.toPlainText().splitlines()
    assert details[0] == copy
    assert f"TensorFlow: {h.ops[op_id].name}" in details[1]
    boxes = [h.groups[g].label for g in h.chain[op_id] if h.groups[g].kind != "root"]
    assert details[2] == "in layer " + " › ".join(boxes) and "fc_layer" in boxes
    # Problems: the op column, TensorFlow's name in its tooltip only
    rows = [window.problems.topLevelItem(i) for i in range(window.problems.topLevelItemCount())]
    (row,) = [r for r in rows if r.data(0, 0x0100).op == op_id]
    assert row.text(1) == copy and h.ops[op_id].name in row.toolTip(1)
    # Search finds it by its display name, and shows that name
    hits = [hit for hit in search(window.analysis.report, h, "weights2") if hit[1] == op_id]
    assert hits and hits[0][2] == copy
    # Copy name gives the same name; TensorFlow's is offered beside it
    assert full_name(view, op_id) == copy and tf_name(view, op_id) == h.ops[op_id].name
    # the variable: its Python path in Variables, the graph, the path's header and Copy name
    var = window.analysis.report.variables[0]
    assert window.variables.select_name(var.name)
    assert h.display_name(f"var:{var.name}") == var.name == full_name(view, f"var:{var.name}")
    text = window.details.toPlainText()
    assert text.splitlines()[0] == f"Gradient path of {var.name}"
    assert copy in text  # the hop through the frozen copy, by the same name


def test_a_long_python_path_keeps_the_variables_own_name_whole(qapp):
    from PySide6.QtGui import QFont, QFontMetricsF

    from app.graph.items import path_elided

    fm = QFontMetricsF(QFont())
    name = "model.layers[0].trainable_variables[0]"
    width = fm.horizontalAdvance("model.layers[0].trainable_v")
    shown = path_elided(name, fm, width)
    assert shown.endswith("trainable_variables[0]") and shown.startswith("mo") and "…" in shown
    assert fm.horizontalAdvance(shown) <= width
    assert path_elided("weights2", fm, 1000) == "weights2"
    tiny = path_elided(name, fm, fm.horizontalAdvance("trainable"))  # not even its name fits
    assert "…" in tiny and fm.horizontalAdvance(tiny) <= fm.horizontalAdvance("trainable")


def test_a_layer_box_shortens_its_class_never_its_shape(qapp):
    """``TokenAndPositionEmbedding → [1,80,64]`` in a box too narrow for it: the class name
    is shortened and the shape it hands on stays whole."""
    from PySide6.QtGui import QFontMetricsF

    from app.graph.items import _SUBTITLE, subtitle_elided

    fm = QFontMetricsF(_SUBTITLE)
    sub = "TokenAndPositionEmbedding → [1,80,64]"
    for width in (fm.horizontalAdvance("TokenAndP → [1,80,64]"), fm.horizontalAdvance(sub) * 0.8):
        shown = subtitle_elided(sub, fm, width)
        assert shown.endswith(" → [1,80,64]") and shown.startswith("Tok") and "…" in shown
        assert fm.horizontalAdvance(shown) <= width
    assert subtitle_elided(sub, fm, fm.horizontalAdvance(sub)) == sub
    tiny = subtitle_elided(sub, fm, fm.horizontalAdvance("Token"))  # not even the shape fits
    assert "…" in tiny and fm.horizontalAdvance(tiny) <= fm.horizontalAdvance("Token")
    assert subtitle_elided("MatMul", fm, 1000) == "MatMul"


def test_a_raw_read_of_a_variable_is_named_as_that_variable(qapp):
    """A weight's resource placeholder that is a problem itself (a read never trained) keeps
    its own node, but is named as the variable it reads, not ``Placeholder resource``: in
    the graph, Problems, Search and Details alike."""
    from app.panels.problems import ProblemsPanel
    from tfviz.report import GraphDoc, GraphEdge, GraphOp, Problem, Report, VariableReport
    from tfviz.structure.hierarchy import Hierarchy

    res = "d/MatMul/ReadVariableOp/resource"
    ops = [
        GraphOp("var:gen.W", "gen.W", "VarHandleOp", "", is_variable=True),
        GraphOp(res, res, "Placeholder", "d/MatMul/ReadVariableOp", status="not_trained"),
        GraphOp("d/MatMul/ReadVariableOp", "d/MatMul/ReadVariableOp", "ReadVariableOp", "d/MatMul"),
        GraphOp("d/MatMul", "d/MatMul", "MatMul", "d"),
    ]
    edge = lambda a, b, dt: GraphEdge(a, b, 0, 0, dt, [], "passes")
    edges = [
        edge("var:gen.W", res, "resource"),
        edge(res, "d/MatMul/ReadVariableOp", "resource"),
        edge("d/MatMul/ReadVariableOp", "d/MatMul", "float32"),
    ]
    report = Report(script="s.py", target="loss", graph=GraphDoc(ops=ops, edges=edges))
    report.variables = [VariableReport("gen.W", "gen/W:0", "float32", [2, 2], "connected")]
    report.problems = [
        Problem(kind="not_trained", severity="warning", op=res, op_type="Placeholder", message="m")
    ]
    h = Hierarchy.of_report(report)
    assert res not in h.alias  # a problem: it keeps its node
    assert h.display_name(res) == "gen.W" and h.user_named(res) and h.title(res) == "gen.W"
    panel = ProblemsPanel()
    panel.set_report(report, h)
    assert panel.topLevelItem(0).text(1) == "gen.W"
