"""The layer-level graph names things as the user wrote them. Small
hand-built graphs, one per rule, each with the case the rule must leave alone."""

from __future__ import annotations

from tfviz.report import GraphDoc, GraphEdge, GraphFunction, GraphOp, TensorInfo, VariableReport
from tfviz.structure.hierarchy import Hierarchy, layer_names

F32 = [TensorInfo("float32", [8, 4])]


def _op(name, typ="Identity", group="", outputs=F32, **kw) -> GraphOp:
    scope = name.rpartition("/")[0]
    return GraphOp(f"{group}/{name}" if group else name, name, typ, scope, group=group, outputs=outputs, **kw)


def _edges(*pairs, dtype="float32") -> list[GraphEdge]:
    return [GraphEdge(a, b, 0, 0, dtype, [8, 4]) for a, b in pairs]


def _random_normal(extra_ops=(), extra_edges=(), status="off_path"):
    ops = [
        _op("random_normal/shape", "Const", outputs=[TensorInfo("int32", [2])]),
        _op("random_normal/mean", "Const", outputs=[TensorInfo("float32", [])]),
        _op("random_normal/RandomStandardNormal", "RandomStandardNormal", status=status),
        _op("random_normal/mul", "Mul"),
        _op("random_normal", "AddV2"),
        _op("MatMul", "MatMul"),
        *extra_ops,
    ]
    edges = _edges(
        ("random_normal/shape", "random_normal/RandomStandardNormal"),
        ("random_normal/RandomStandardNormal", "random_normal/mul"),
        ("random_normal/mean", "random_normal"),
        ("random_normal/mul", "random_normal"),
        ("random_normal", "MatMul"),
    ) + list(extra_edges)
    return Hierarchy(GraphDoc(ops=ops, edges=edges))


def test_an_api_call_is_one_node_titled_by_the_call():
    h = _random_normal()
    assert [g.label for g in h.groups.values()] == ["graph"]
    visible = {h.representative(o, set(h.groups)) for o in h.ops}
    assert visible == {"random_normal", "MatMul"}  # the call's inside is drawn as its result
    assert h.title("random_normal") == "random_normal"
    assert h.child_edges()["f:"] == [("random_normal", "MatMul")]


def test_an_api_call_read_from_outside_or_holding_a_problem_stays_open():
    read = _random_normal([_op("Exp", "Exp")], _edges(("random_normal/mul", "Exp")))
    assert "random_normal/mul" not in read.alias and read.title("random_normal/mul") == "random_normal/mul"
    broken = _random_normal(status="no_gradient")
    assert "random_normal/RandomStandardNormal" not in broken.alias
    # a constant left in view says what it holds, not its scoped name
    assert broken.title("random_normal/mean") == "random_normal/mean"  # an API named it: kept
    assert read.title("random_normal/shape") == "random_normal/shape"


def test_a_user_scope_named_like_an_api_keeps_its_box_when_it_holds_layers():
    ops = [
        _op("random_normal_1/dense_1/MatMul", "MatMul"),
        _op("random_normal_1/out_1/MatMul", "MatMul"),
        _op("random_normal", "AddV2"),
    ]
    edges = _edges(
        ("random_normal_1/dense_1/MatMul", "random_normal_1/out_1/MatMul"),
        ("random_normal_1/out_1/MatMul", "random_normal"),
    )
    variables = [
        VariableReport(f"m.{n}.kernel", f"random_normal/{n}/kernel", "float32", [4, 4], "connected")
        for n in ("dense", "out")
    ]
    h = Hierarchy(GraphDoc(ops=ops, edges=edges), layer_names(variables))
    labels = {g.label: g.kind for g in h.groups.values()}
    assert labels == {"graph": "root", "random_normal": "layer", "dense": "layer", "out": "layer"}
    assert not h.alias


def test_constants_the_trace_named_say_what_they_hold():
    int2 = [TensorInfo("int32", [2])]
    ops = [
        _op("strided_slice/stack_1", "Const", outputs=int2),
        _op("sliced", "StridedSlice"),
        _op("Const_3", "Const", outputs=[TensorInfo("float32", [])]),
        _op("221", "Const", outputs=[TensorInfo("float32", [576])]),
        _op("scale", "Const", outputs=[TensorInfo("float32", [])]),
        _op("mul", "Mul"),
    ]
    edges = _edges(("strided_slice/stack_1", "sliced"), ("Const_3", "mul"), ("221", "mul"), ("scale", "mul"))
    h = Hierarchy(GraphDoc(ops=ops, edges=edges))
    assert h.title("strided_slice/stack_1") == "const int32[2]"  # no result op to fold into
    assert h.title("Const_3") == "const float32 scalar"
    assert h.title("221") == "const float32[576]"  # never a bare number
    assert h.title("scale") == "scale"  # the user's name
    assert h.title("mul") == "mul"


def test_repeated_calls_lose_the_trace_suffix_and_are_told_apart_by_call_order():
    ops, edges = [], []
    for scope in ("bce", "bce_1", "bce_2", "loss_1"):
        names = [f"{scope}/op{i}" for i in range(8)]  # big enough to stay a box
        ops += [_op(n, "Mul") for n in names]
        edges += _edges(*zip(names, names[1:]))
    for scope in ("disc_1", "disc_3", "x_1"):
        ops.append(_op(f"{scope}/MatMul", "MatMul"))
    variables = [
        VariableReport("d.k", "disc/k", "float32", [4], "connected"),
        VariableReport("x.k", "x_1/k", "float32", [4], "connected"),
    ]
    h = Hierarchy(GraphDoc(ops=ops, edges=edges), layer_names(variables))
    by_scope = {g.scope: g.label for g in h.groups.values() if g.scope}
    assert by_scope == {
        "bce": "bce",
        "bce_1": "bce (2nd call)",
        "bce_2": "bce (3rd call)",
        "loss_1": "loss_1",  # alone: nothing shows the trace numbered it
        "disc_1": "disc",
        "disc_3": "disc (2nd call)",  # a layer, called twice
        "x_1": "x_1",
    }  # a layer the user named x_1


def _loop():
    body = GraphFunction("while#body", "while_body_646", "body", "", "while", call_type="While")
    call = GraphFunction("f#call", "__inference_step_9", "call", "", "f")
    i32, f32 = [TensorInfo("int32", [4])], [TensorInfo("float32", [4, 20])]
    ops = [
        _op("while/Placeholder_1", "Placeholder", "while#body", outputs=i32),
        _op("while/while/loop_counter", "Placeholder", "while#body", outputs=[TensorInfo("int32", [])]),
        _op("while/GatherNd/params", "Placeholder", "while#body", outputs=f32),
        _op("while/GatherNd", "GatherNd", "while#body"),
        _op("while/add", "AddV2", "while#body", outputs=i32),
        _op("while/Identity_3", "Identity", "while#body", outputs=i32),
        _op("x", "Placeholder", "f#call"),
        _op("Tanh", "Tanh", "f#call"),
        _op("576", "Placeholder", outputs=f32),
        _op("ReadVariableOp", "ReadVariableOp"),
        _op("zeros", "Const", outputs=i32),
        _op("while", "While"),
        _op("f", "PartitionedCall"),
        _op("w", "Placeholder", outputs=[TensorInfo("resource", [])]),
    ]
    edges = _edges(
        ("zeros", "while#body/while/Placeholder_1"),
        ("576", "while#body/while/GatherNd/params"),
        ("while#body/while/GatherNd/params", "while#body/while/GatherNd"),
        ("while#body/while/Placeholder_1", "while#body/while/add"),
        ("while#body/while/add", "while#body/while/Identity_3"),
        ("zeros", "f#call/x"),
        ("f#call/x", "f#call/Tanh"),
        ("w", "ReadVariableOp"),
    )
    edges.append(
        GraphEdge(
            "while#body/while/Identity_3", "while#body/while/Placeholder_1", 0, 0, "int32", [4], back=True
        )
    )
    return Hierarchy(GraphDoc(ops=ops, edges=edges, functions=[body, call]))


def test_loop_bodies_and_captured_inputs_are_named_by_what_they_hold():
    h = _loop()
    body = h.groups["f:while#body"]
    assert body.label == "body of while_loop"
    assert all(c not in h.groups for c in body.children)  # no `while` box inside the body
    title = {o: h.title(o) for o in h.ops}
    assert title["while#body/while/add"] == "add"  # without the loop's scope
    assert title["while#body/while/Placeholder_1"] == "loop_vars[1] int32[4]"
    assert title["while#body/while/while/loop_counter"] == "loop counter"
    assert title["while#body/while/GatherNd/params"] == "captured float32[4,20]"
    assert title["576"] == "captured float32[4,20]"  # never the bare number
    assert title["w"] == "captured variable"
    assert title["f#call/x"] == "x"  # a tf.function's argument keeps the user's name
    assert h.groups["f:f#call"].label == "step (tf.function)"
    assert not any(t.isdigit() for t in title.values())


def test_an_open_group_title_drops_its_op_count_then_elides_its_name_to_fit(qapp):
    from PySide6.QtGui import QFontMetricsF

    from app.graph.items import _BOLD, frame_title

    fm = QFontMetricsF(_BOLD)
    title = "discriminator (2nd call)  ·  14 ops"
    whole = fm.horizontalAdvance("▾ " + title)
    assert frame_title(title, whole + 1) == "▾ " + title
    name_only = frame_title(title, whole - 5)
    assert name_only == "▾ discriminator (2nd call)"  # the count goes first, the name stays whole
    short = frame_title(title, fm.horizontalAdvance("▾ discriminator"))
    assert "…" in short and fm.horizontalAdvance(short) <= fm.horizontalAdvance("▾ discriminator")
    assert short.startswith("▾ d") and short.endswith(")")


def test_a_captured_tensor_is_titled_by_the_python_path_the_worker_found():
    from tfviz.report import GraphDoc, GraphEdge, GraphOp, TensorInfo
    from tfviz.structure.hierarchy import Hierarchy

    t = [TensorInfo("float32", [784, 10])]
    ops = [
        GraphOp("var:w", "w", "Variable", "", is_variable=True),
        GraphOp(
            "fc/MatMul/b",
            "fc/MatMul/b",
            "Placeholder",
            "fc/MatMul",
            outputs=t,
            label="model.layers[0].weights2",
        ),
        GraphOp("fc/x", "fc/x", "Placeholder", "fc", outputs=t),
        GraphOp("fc/MatMul", "fc/MatMul", "MatMul", "fc", outputs=t),
    ]
    e = lambda a, b: GraphEdge(a, b, 0, 0, "float32", [784, 10])
    h = Hierarchy(
        GraphDoc(
            ops=ops, edges=[e("var:w", "fc/MatMul/b"), e("fc/MatMul/b", "fc/MatMul"), e("fc/x", "fc/MatMul")]
        ),
        {},
    )
    assert h.title("fc/MatMul/b") == "model.layers[0].weights2"
    assert h.title("fc/x") != "model.layers[0].weights2"  # no label: named as before


def test_layers_are_titled_by_the_layer_that_opened_each_scope_not_by_its_traced_name():
    """``dense`` runs under ``dense_1`` and the layer ``dense_1`` under ``dense_1_2``: the
    names alone read as one layer called twice; the graph's map says which is which."""
    ops = [
        _op("vq_1/dense_1/MatMul", "MatMul"),
        _op("vq_1/dropout_1/Identity", "Identity"),
        _op("vq_1/dense_1_2/MatMul", "MatMul"),
        _op("gradient_tape/vq_1/dense_1_2/MatMul", "MatMul"),
    ]
    edges = _edges(
        ("vq_1/dense_1/MatMul", "vq_1/dropout_1/Identity"),
        ("vq_1/dropout_1/Identity", "vq_1/dense_1_2/MatMul"),
        ("vq_1/dense_1_2/MatMul", "gradient_tape/vq_1/dense_1_2/MatMul"),
    )
    variables = [
        VariableReport(f"m.{n}.kernel", f"vq/{n}/kernel", "float32", [4, 4], "connected")
        for n in ("dense", "dense_1")
    ]
    doc = GraphDoc(ops=ops, edges=edges)
    guessed = Hierarchy(doc, layer_names(variables))
    titles = {g.scope: g.label for g in guessed.groups.values() if g.scope}
    assert titles["vq_1/dense_1"] == "dense_1"  # what the names alone say: wrong
    doc.layer_scopes = {
        "vq_1": "vq",
        "vq_1/dense_1": "dense",
        "vq_1/dense_1_2": "dense_1",
        "vq_1/dropout_1": "dropout",
    }
    h = Hierarchy(doc, layer_names(variables))
    groups = {g.scope: g for g in h.groups.values() if g.scope}
    titles = {s: g.label for s, g in groups.items()}
    assert {s: titles[s] for s in doc.layer_scopes} == doc.layer_scopes
    assert titles["gradient_tape/vq_1/dense_1_2"] == "dense_1"  # its gradient, titled as the layer
    assert all(groups[s].kind == "layer" for s in ("vq_1/dense_1", "vq_1/dense_1_2", "vq_1/dropout_1"))


def test_another_gradient_calls_ops_are_one_closed_box():
    """A GAN's second step holds its first tape's gradient ops (``gradient_tape/...``): one
    box titled as a gradient computation, closed in the first view, not a model of layers."""
    from tfviz.structure.hierarchy import GRADIENT_TITLE

    ops = [
        _op("gen_1/g_1/MatMul", "MatMul"),
        _op("gen_1/g_2_1/MatMul", "MatMul"),
        _op("gradient_tape/gen_1/g_1/MatMul", "MatMul"),
        _op("gradient_tape/gen_1/g_2_1/MatMul", "MatMul"),
        _op("gradient_tape/gen_1/g_2_1/MatMul_1", "MatMul"),
        _op("loss", "AddV2"),
    ]
    edges = _edges(
        ("gen_1/g_1/MatMul", "gen_1/g_2_1/MatMul"),
        ("gen_1/g_2_1/MatMul", "loss"),
        ("gradient_tape/gen_1/g_2_1/MatMul", "gradient_tape/gen_1/g_1/MatMul"),
        ("gradient_tape/gen_1/g_1/MatMul", "loss"),
    )
    variables = [
        VariableReport(f"m.{n}.kernel", f"gen/{n}/kernel", "float32", [4, 4], "connected")
        for n in ("g_1", "g_2")
    ]
    h = Hierarchy(GraphDoc(ops=ops, edges=edges), layer_names(variables))
    (grad,) = [g for g in h.groups.values() if g.scope == "gradient_tape"]
    assert grad.kind == "gradient" and grad.label == GRADIENT_TITLE
    opened = h.default_expanded()
    assert grad.id not in opened
    assert any(h.groups[g].scope == "gen_1" for g in opened)  # the model itself opens as before
