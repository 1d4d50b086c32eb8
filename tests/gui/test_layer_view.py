"""The graph opens at layer level on the first problem, and a
variable's gradient path is isolated, fitted and listed hop by hop."""

from __future__ import annotations

from conftest import EXAMPLES, run_analysis
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontInfo

from app.graph.framing import readable_scale
from app.graph.items import _FONT, NodeItem

SG = EXAMPLES / "kind_stop_gradient_layer.py"


def _open(qtbot, window, script):
    report = window.analysis.report
    if report is None or report.script != str(script):  # not another test's report
        run_analysis(qtbot, window, script)
    assert window.analysis.report is not None, window.analysis.last_error
    qtbot.wait(50)
    return window.graph.view


def _text_px(view) -> float:
    return view.transform().m11() * QFontInfo(_FONT).pixelSize()


def _in_viewport(view, item) -> bool:
    r = view.mapFromScene(item.sceneBoundingRect()).boundingRect()
    return QRectF(view.viewport().rect()).intersects(QRectF(r))


def test_default_view_is_layer_level_on_the_cut(qtbot, window):
    view = _open(qtbot, window, SG)
    h = view.hierarchy
    layers = {g.label for g in h.groups.values() if g.kind == "layer"}
    assert layers == {"encoder", "enc_1", "enc_2", "head"}  # Keras names, no trace `_1`
    assert not any(g.label in ("Cast", "ReadVariableOp", "BiasAdd") for g in h.groups.values())
    # a weight's Cast › ReadVariableOp is drawn as the weight's node
    read = "encoder/enc_1/Cast/ReadVariableOp"
    assert h.representative(read, set(h.groups)) == 'var:encoder.get_layer("enc_1").kernel'
    # inside its layer's box the weight is titled by its own name; the full path is its tooltip
    assert h.title('var:encoder.get_layer("enc_1").kernel') == "kernel"
    assert h.title("var:head.kernel") == "kernel"  # the box is the attribute `head` itself
    # the input the loss captures is named as the script holds it (``x = tf.random.normal(...)``)
    (x,) = [o for o in h.ops if h.title(o) == "x"]
    assert h.ops[x].type == "Placeholder" and h.ops[x].outputs[0].shape == [32, 8]
    # opens on the cut: StopGradient in view, readable
    sg = view.node_items.get("StopGradient")
    assert sg is not None and _in_viewport(view, sg)
    assert _text_px(view) >= 9.0
    assert "f:/s:encoder/enc_1" not in view.expanded  # layers stay boxes


def test_selecting_a_cut_variable_isolates_its_path(qtbot, window):
    view = _open(qtbot, window, SG)
    assert window.variables.select_name('encoder.get_layer("enc_1").kernel')
    qtbot.wait(50)
    path = view.path
    assert path is not None and path.cut and path.end == "StopGradient"
    on_path = window.links.current_path_ops
    assert "StopGradient" in on_path and "__target__" not in on_path
    assert view.node_items["StopGradient"].opacity() == 1.0
    assert view.node_items["StopGradient"].highlight
    head = next(i for n, i in view.node_items.items() if n == "f:/s:head")
    assert head.opacity() < 0.5  # everything else dimmed
    assert _in_viewport(view, view.node_items["StopGradient"]) and _text_px(view) >= 9.0
    text = window.details.toPlainText()
    assert 'Gradient path of encoder.get_layer("enc_1").kernel' in text
    for hop in ("MatMul", "BiasAdd", "Relu", "StopGradient", "float32[32,16]", "no gradient arrives"):
        assert hop in text
    assert "ReadVariableOp" not in text  # drawn as the weight, so not a hop of its own


def test_show_path_on_the_right_click_menu(qtbot, window):
    view = _open(qtbot, window, SG)
    view.show_path(None)
    item = view.node_items["StopGradient"]
    view.centerOn(item)
    qtbot.wait(20)
    pos = view.mapFromScene(item.sceneBoundingRect().center())
    menu = view.context_menu(pos)
    acts = {a.text(): a for a in menu.actions()}
    assert "Show path" in acts
    assert any(t.startswith("Jacobian of this") for t in acts)  # the Jacobian entries stay
    acts["Show path"].trigger()
    qtbot.wait(20)
    assert view.path is not None and view.path.start == "StopGradient"
    assert "__target__" in window.links.current_path_ops
    assert "Gradient path of StopGradient" in window.details.toPlainText()
    # a layer's path: every way from its weights through it to the target
    window.links.show_path("f:/s:head")
    assert {"var:head.kernel", "head/MatMul", "__target__"} <= window.links.current_path_ops
    header = window.details.toPlainText().splitlines()[0]
    title = view.hierarchy.groups["f:/s:head"].label
    assert header == f"Gradient path of {title}"  # the box's title, no id
    # a box no gradient arrives at: its path ends at the cut, as its variable's does
    window.links.show_path("f:/s:encoder/enc_1")
    assert view.path.cut and view.path.end == "StopGradient"
    on_path = window.links.current_path_ops
    assert "__target__" not in on_path and "StopGradient" in on_path
    text = window.details.toPlainText()
    assert "where its gradient stops" in text and "Every way from here to the target" not in text
    assert window.variables.select_name('encoder.get_layer("enc_1").kernel')
    assert view.path.cut and view.path.end == "StopGradient"
    # a connected variable's path reaches the target
    assert window.variables.select_name("head.kernel")
    assert view.path.end == "__target__" and not view.path.cut
    assert view.highlighted_edges > 0
    assert any(isinstance(i, NodeItem) and i.opacity() < 0.5 for i in view.node_items.values())


def test_loop_bodies_named_as_written_and_healthy_opens_readable(qtbot, window):
    view = _open(qtbot, window, EXAMPLES / "kind_integer_while.py")
    labels = {g.label for g in view.hierarchy.groups.values()}
    assert any(lb.startswith("body of while_loop at kind_integer_while.py:") for lb in labels), labels
    assert _text_px(view) >= 9.0
    view = _open(qtbot, window, EXAMPLES / "healthy_batchnorm.py")
    assert view.transform().m11() >= readable_scale() - 1e-6
    assert not any(
        lb.endswith("_1") for lb in (g.label for g in view.hierarchy.groups.values() if g.kind == "layer")
    )


def test_grouping_follows_layers_not_op_name_prefixes():
    from tfviz.report import GraphDoc, GraphEdge, GraphOp, TensorInfo, VariableReport
    from tfviz.structure.hierarchy import Hierarchy

    f32 = [TensorInfo("float32", [2, 4])]
    ops = [
        GraphOp("var:k", "model.dense.kernel", "Variable", "", is_variable=True, on_path=True),
        GraphOp(
            "model_1/dense_1/Cast/ReadVariableOp/resource",
            "r",
            "Placeholder",
            "model_1/dense_1/Cast/ReadVariableOp",
            on_path=True,
            outputs=[TensorInfo("resource", [])],
        ),
        GraphOp(
            "model_1/dense_1/Cast/ReadVariableOp",
            "model_1/dense_1/Cast/ReadVariableOp",
            "ReadVariableOp",
            "model_1/dense_1/Cast",
            on_path=True,
            outputs=f32,
        ),
        GraphOp(
            "model_1/dense_1/MatMul",
            "model_1/dense_1/MatMul",
            "MatMul",
            "model_1/dense_1",
            on_path=True,
            outputs=f32,
        ),
        GraphOp(
            "model_1/flatten_1/Reshape",
            "model_1/flatten_1/Reshape",
            "Reshape",
            "model_1/flatten_1",
            on_path=True,
            outputs=f32,
        ),
        GraphOp(
            "model_1/out_1/MatMul",
            "model_1/out_1/MatMul",
            "MatMul",
            "model_1/out_1",
            on_path=True,
            outputs=f32,
        ),
        GraphOp("strided_slice/stack", "strided_slice/stack", "Const", "strided_slice", outputs=f32),
        GraphOp("strided_slice", "strided_slice", "StridedSlice", "", on_path=True, outputs=f32),
        GraphOp("x", "x", "Placeholder", "", outputs=f32),
        GraphOp("__target__", "loss", "Target", "", on_path=True),
    ]
    chain = [
        "var:k",
        "model_1/dense_1/Cast/ReadVariableOp/resource",
        "model_1/dense_1/Cast/ReadVariableOp",
        "model_1/dense_1/MatMul",
        "model_1/flatten_1/Reshape",
        "model_1/out_1/MatMul",
        "strided_slice",
        "__target__",
    ]
    edges = [
        GraphEdge(a, b, 0, 0, "resource" if i < 2 else "float32", [], status="passes")
        for i, (a, b) in enumerate(zip(chain, chain[1:]))
    ]
    edges += [
        GraphEdge("x", "model_1/dense_1/MatMul", 0, 1, "float32", [2, 4]),
        GraphEdge("strided_slice/stack", "strided_slice", 0, 1, "int32", [1]),
    ]
    variables = [
        VariableReport("model.dense.kernel", "model/dense/kernel", "float32", [4, 4], "connected"),
        VariableReport("model.out.kernel", "model/out/kernel", "float32", [4, 1], "connected"),
    ]
    from tfviz.structure.hierarchy import layer_names

    h = Hierarchy(GraphDoc(ops=ops, edges=edges), layer_names(variables))
    labels = {g.label: g.kind for g in h.groups.values()}
    assert labels == {
        "graph": "root",
        "model": "layer",
        "dense": "layer",
        "flatten": "layer",
        "out": "layer",
    }  # strided_slice flattened, Cast › ReadVariableOp gone
    assert h.representative("model_1/dense_1/Cast/ReadVariableOp", set(h.groups)) == "var:k"
    assert h.title("x") == "captured float32[2,4]"
    assert h.title("model_1/dense_1/MatMul") == "MatMul"


def test_a_variable_stays_in_the_layer_that_owns_it(qapp):
    """A discriminator called twice (on real, then on fake images) and read again by an earlier
    tape's gradient ops: its kernel sits in the first call's layer, never above the model."""
    from tfviz.report import GraphDoc, GraphEdge, GraphOp, TensorInfo, VariableReport
    from tfviz.structure.hierarchy import ROOT, Hierarchy, layer_names, variable_owners

    f32 = [TensorInfo("float32", [2, 2])]

    def op(oid, scope, kind="MatMul"):
        return GraphOp(oid, oid, kind, scope, on_path=True, outputs=f32)

    ops = [
        GraphOp("var:d.kernel", "d.kernel", "VarHandleOp", "", on_path=True, is_variable=True),
        GraphOp("var:g.kernel", "g.kernel", "VarHandleOp", "", on_path=True, is_variable=True),
        op("gen/g_dense/MatMul", "gen/g_dense"),
        op("disc/d_dense/MatMul", "disc/d_dense"),
        op("disc/d_out/MatMul", "disc/d_out"),
        op("disc_1/d_dense/MatMul", "disc_1/d_dense"),
        op("disc_1/d_out/MatMul", "disc_1/d_out"),
        op("gradient_tape/gen/g_dense/MatMul_1", "gradient_tape/gen/g_dense"),
        op("__target__", "", "Target"),
    ]
    pairs = [
        ("var:d.kernel", "disc/d_dense/MatMul"),
        ("var:d.kernel", "disc_1/d_dense/MatMul"),
        ("var:g.kernel", "gen/g_dense/MatMul"),
        ("var:g.kernel", "gradient_tape/gen/g_dense/MatMul_1"),
        ("gen/g_dense/MatMul", "disc_1/d_dense/MatMul"),
        ("disc/d_dense/MatMul", "disc/d_out/MatMul"),
        ("disc_1/d_dense/MatMul", "disc_1/d_out/MatMul"),
        ("disc/d_out/MatMul", "__target__"),
        ("disc_1/d_out/MatMul", "__target__"),
    ]
    edges = [GraphEdge(a, b, 0, 0, "float32", [2, 2], status="passes") for a, b in pairs]
    variables = [
        VariableReport("d.kernel", "disc/d_dense/kernel", "float32", [2, 2], "connected"),
        VariableReport("g.kernel", "gen/g_dense/kernel", "float32", [2, 2], "connected"),
    ]
    h = Hierarchy(GraphDoc(ops=ops, edges=edges), layer_names(variables), variable_owners(variables))
    for var, layer in (("var:d.kernel", "d_dense"), ("var:g.kernel", "g_dense")):
        home = h.groups[h.parent[var]]
        assert home.id != ROOT and home.kind == "layer" and home.label == layer, (var, home)
    # the first call's layer: the discriminator's first box, not the second call's
    assert h.groups[h.parent["var:d.kernel"]].scope == "disc/d_dense"
