"""Selecting a layer shows its attributes in Details: what it is, its
variables with status and gradient norm, its input and output shapes, problems inside."""

from __future__ import annotations

from conftest import EXAMPLES, run_analysis
from PySide6.QtWidgets import QApplication

from app.graph.palette import STYLES, text_color
from app.panels.docks import DetailsPanel
from app.panels.layer_details import group_html
from tests.gui.test_minimap import _chain_report
from tfviz.report import GraphDoc, GraphEdge, GraphOp, Report, TensorInfo, VariableReport
from tfviz.structure.hierarchy import Hierarchy, layer_names


def _t(shape, dtype="float32"):
    return [TensorInfo(dtype, shape)]


def _dense(ops, edges, scope, var, x, x_shape, out_shape, status, cut=""):
    """A Keras Dense layer as traced: the kernel's resource placeholder and read, MatMul."""
    res, read, mm = f"{scope}/Cast/ReadVariableOp/resource", f"{scope}/Cast/ReadVariableOp", f"{scope}/MatMul"
    ops += [
        GraphOp(
            res,
            res,
            "Placeholder",
            f"{scope}/Cast/ReadVariableOp",
            outputs=_t([], "resource"),
            on_path=True,
            status=status,
            cut_at=cut,
        ),
        GraphOp(
            read,
            read,
            "ReadVariableOp",
            f"{scope}/Cast",
            outputs=_t([8, 16]),
            on_path=True,
            status=status,
            cut_at=cut,
        ),
        GraphOp(mm, mm, "MatMul", scope, outputs=_t(out_shape), on_path=True, status=status, cut_at=cut),
    ]
    edges += [
        GraphEdge(var, res, 0, 0, "resource", [], status=status, cut_at=cut),
        GraphEdge(res, read, 0, 0, "resource", [], status=status, cut_at=cut),
        GraphEdge(read, mm, 0, 1, "float32", [8, 16], status=status, cut_at=cut),
        GraphEdge(x, mm, 0, 0, "float32", x_shape, status="off_path" if "/a" in x else status, cut_at=cut),
    ]
    return mm


def _layers_report() -> Report:
    """``encoder`` (Dense ``enc_1``) behind a stop_gradient, then a Dense ``head``: Keras' names
    (``encoder_1/enc_1_1``) as the trace writes them."""
    ops, edges = [], []
    x = "encoder_1/enc_1_1/MatMul/a"
    ops.append(GraphOp(x, x, "Placeholder", "encoder_1/enc_1_1/MatMul", outputs=_t([32, 8])))
    k1, k2 = "var:encoder.layers[0].kernel", "var:head.kernel"
    enc = _dense(ops, edges, "encoder_1/enc_1_1", k1, x, [32, 8], [32, 16], "starved", "sg")
    ops.append(
        GraphOp(
            "sg",
            "StopGradient",
            "StopGradient",
            "",
            outputs=_t([32, 16]),
            on_path=True,
            status="stop_gradient",
        )
    )
    edges.append(GraphEdge(enc, "sg", 0, 0, "float32", [32, 16], status="stop_gradient"))
    head = _dense(ops, edges, "head_1", k2, "sg", [32, 16], [32, 1], "passes")
    edges[-1].grad_norm = 0.25
    ops.append(GraphOp("__target__", "loss", "Target", "", outputs=_t([]), on_path=True))
    edges.append(GraphEdge(head, "__target__", 0, 0, "float32", [32, 1], status="passes", grad_norm=0.5))
    ops += [
        GraphOp(
            k1,
            "encoder.layers[0].kernel",
            "Variable",
            "",
            on_path=True,
            is_variable=True,
            status="starved",
            cut_at="sg",
        ),
        GraphOp(k2, "head.kernel", "Variable", "", on_path=True, is_variable=True),
    ]
    variables = [
        VariableReport(
            "encoder.layers[0].kernel",
            "encoder/enc_1/kernel",
            "float32",
            [8, 16],
            "disconnected",
            "stop_gradient",
            blocked_at=["sg"],
        ),
        VariableReport("head.kernel", "head/kernel", "float32", [16, 1], "connected", None, 1.25),
    ]
    return Report(script="x.py", target="loss", variables=variables, graph=GraphDoc(ops=ops, edges=edges))


def _group(h: Hierarchy, label: str) -> str:
    return next(g for g in h.groups if h.groups[g].label == label)


def _details(report: Report, label: str) -> tuple[str, str]:
    h = Hierarchy(report.graph, layer_names(report.variables))
    panel = DetailsPanel()
    panel.show_op(report, _group(h, label), label, h)
    return panel.toPlainText(), group_html(report, h, _group(h, label))


def test_layer_lists_its_variables_with_status_and_its_shapes(qapp):
    text, html = _details(_layers_report(), "enc_1")
    assert "Keras layer · encoder.layers[0]" in text  # its Python object; its variables within it
    assert "\nkernel\n" in text and "head.kernel" not in text
    assert "none: stop_gradient" in text
    assert f"color:{text_color('disconnected')}'><b>none: stop_gradient" in html  # coloured by status
    assert "Inputs (1)" in text and "float32(32, 8)" in text and "captured input" in text
    assert "Outputs (1)" in text and "float32(32, 16)" in text and "StopGradient" in text
    assert "1 variable no gradient reaches" in text
    assert "double-click" in text.lower()


def test_healthy_layer_shows_norms_and_where_its_tensors_go(qapp):
    text, html = _details(_layers_report(), "head")
    assert "Keras layer · head" in text and "\nkernel\n" in text and "flows" in text and "1.25" in text
    assert f"color:{text_color('connected')}'><b>flows" in html
    assert "StopGradient" in text and "float32(32, 16)" in text  # its input, from the cut
    assert "float32(32, 1)" in text and "→ loss" in text and "0.5" in text  # its output and its norm
    assert "No problem ops inside" in text


def test_model_holding_layers_is_named_a_model(qapp):
    report = _layers_report()
    report.variables.append(
        VariableReport(
            "encoder.layers[1].kernel",
            "encoder/enc_2/kernel",
            "float32",
            [16, 16],
            "disconnected",
            "stop_gradient",
        )
    )
    mm = _dense(
        report.graph.ops,
        report.graph.edges,
        "encoder_1/enc_2_1",
        "var:encoder.layers[1].kernel",
        "encoder_1/enc_1_1/MatMul",
        [32, 16],
        [32, 16],
        "starved",
        "sg",
    )
    report.graph.ops.append(
        GraphOp(
            "var:encoder.layers[1].kernel",
            "encoder.layers[1].kernel",
            "Variable",
            "",
            on_path=True,
            is_variable=True,
            status="starved",
            cut_at="sg",
        )
    )
    for e in report.graph.edges:  # enc_2 now sits between enc_1 and the stop_gradient
        if e.dst == "sg":
            e.src = mm
    text, _ = _details(report, "encoder")
    assert "Keras layer with 2 inner layers" in text
    assert "Keras layer with 2 inner layers · encoder" in text
    assert "layers[0].kernel" in text and "layers[1].kernel" in text
    assert "Variables (2)" in text


def test_problem_ops_inside_a_group_are_listed(qapp):
    report = _chain_report()
    text, html = _details(report, "blk2")
    assert "name scope" in text and "10 ops" in text
    assert f"1 × {STYLES['raises'].label.split(' (')[0]}" in text
    assert "Svd" in text and "op20" in text and "unimplemented" in text
    assert "float32(4, 4)" in text  # the tensor in from blk1 and out to blk3


def test_selecting_a_group_in_the_window_shows_its_attributes(qapp):
    from app.window import MainWindow
    from app.worker_client import WorkerPool

    w = MainWindow(WorkerPool(spare=False))
    try:
        report = _layers_report()
        w.analysis.report = report
        w.show_report(report)
        view = w.graph.view
        gid = _group(view.hierarchy, "head")
        if gid not in view.node_items:  # shown as a frame: collapse it to a box
            view.toggle_group(gid)
        view.node_items[gid].setSelected(True)
        QApplication.processEvents()
        text = w.details.toPlainText()
        assert "Keras layer · head" in text and "flows" in text and "1.25" in text
    finally:
        w.close()
        w.deleteLater()


def test_real_keras_layer_details(qtbot, window):
    """The stop_gradient example, analyzed by the worker: ``enc_1``'s weights get none."""
    script = EXAMPLES / "kind_stop_gradient_layer.py"
    run_analysis(qtbot, window, script)
    assert window.analysis.report is not None, window.analysis.last_error
    view = window.graph.view
    gid = _group(view.hierarchy, "enc_1")
    window.details.show_op(window.analysis.report, gid, "enc_1", view.hierarchy)
    text = window.details.toPlainText()
    # its Keras class and settings, as the trace recorded them, and its Python object
    assert 'Dense · encoder.get_layer("enc_1")' in text  # named by the name the program gave it
    assert "units 16" in text and "activation relu" in text
    (enc,) = [g for g in view.hierarchy.groups if view.hierarchy.groups[g].label == "encoder"]
    window.details.show_op(window.analysis.report, enc, "encoder", view.hierarchy)
    assert "Sequential with 2 inner layers" in window.details.toPlainText()
    assert "\nkernel\n" in text and "\nbias\n" in text
    assert text.count("none: stop_gradient") == 2
    assert "float32(32, 8)" in text and "float32(32, 16)" in text


def test_a_layer_box_says_its_class_and_the_shape_it_hands_on(qtbot, window):
    run_analysis(qtbot, window, EXAMPLES / "kind_stop_gradient_layer.py")
    view = window.graph.view
    gid = _group(view.hierarchy, "enc_1")
    if gid not in view.node_items:  # shown as a frame: collapse it to a box
        view.toggle_group(gid)
    assert view.node_items[gid].subtitle == "Dense → [32,16]"  # float32 goes without saying


def test_a_layer_box_names_the_tensor_it_hands_on_not_its_statistics(qapp):
    """A BatchNormalization's batch mean leaves it first (toward its moving average, off the
    gradient path); its subtitle gives the normalized batch the next layer reads."""
    from tfviz.report import GraphDoc, GraphEdge, GraphOp
    from tfviz.structure.hierarchy import Hierarchy, group_outputs

    ops = [
        GraphOp("bn/moments/mean", "bn/moments/mean", "Mean", "bn", on_path=True),
        GraphOp("bn/batchnorm/add_1", "bn/batchnorm/add_1", "AddV2", "bn", on_path=True),
        GraphOp("assign", "assign", "AssignSubVariableOp", ""),
        GraphOp("act/Relu", "act/Relu", "Relu", "act", on_path=True),
    ]
    edges = [
        GraphEdge("bn/moments/mean", "assign", 0, 1, "float32", [256], status="off_path"),
        GraphEdge("bn/batchnorm/add_1", "act/Relu", 0, 0, "float32", [16, 256], status="passes"),
    ]
    h = Hierarchy(GraphDoc(ops=ops, edges=edges), {"bn", "act"})
    (bn,) = [g for g in h.groups.values() if g.scope == "bn"]
    assert group_outputs(h)[bn.id] == ("float32", [16, 256])
