"""A long model uses the window's width: its chain of layers is wrapped into side-by-side
columns, read down each column and on into the next along an edge up the gutter, and the
first view shows several columns at a readable zoom, where it showed seven boxes in a
quarter of the width."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QApplication

from app.graph.framing import readable_scale
from app.graph.layout import columns, layered
from app.graph.layout.placement import OP_SIZE, GraphLayout
from app.graph.view import GraphView
from tfviz.report import GraphDoc, GraphEdge, GraphOp, Problem, Report, TensorInfo, VariableReport
from tfviz.structure.hierarchy import Hierarchy, layer_names, variable_owners

F32 = [TensorInfo("float32", [8, 16])]


def _sequential(n: int = 30, cut_after: int | None = None) -> Report:
    """A Keras ``Sequential`` named ``model`` of ``n`` Dense layers (a MatMul reading its
    kernel each) into a loss; with ``cut_after``, an Svd whose gradient raises after that
    layer, so the layers above it get none."""
    ops = [GraphOp("x", "x", "Placeholder", "", outputs=F32)]
    edges, variables, prev = [], [], "x"

    def link(a: str, b: str, status: str = "passes") -> None:
        edges.append(GraphEdge(a, b, 0, 0, "float32", [8, 16], status=status))

    for i in range(n):
        name, mm = f"model.layers[{i}].kernel", f"model/dense_{i}/MatMul"
        cut = cut_after is not None and i <= cut_after
        variables.append(
            VariableReport(
                name,
                f"model/dense_{i}/kernel",
                "float32",
                [16, 16],
                "broken" if cut else "connected",
                "unimplemented" if cut else None,
            )
        )
        ops += [
            GraphOp(f"var:{name}", name, "VarHandleOp", "", on_path=True, is_variable=True),
            GraphOp(mm, mm, "MatMul", f"model/dense_{i}", on_path=True, outputs=F32),
        ]
        link(f"var:{name}", mm)
        link(prev, mm)
        prev = mm
        if i == cut_after:
            ops.append(
                GraphOp(
                    "svd",
                    "model/svd",
                    "Svd",
                    "model",
                    on_path=True,
                    status="unimplemented",
                    message="no gradient",
                    outputs=F32,
                )
            )
            link(prev, "svd", "unimplemented")
            prev = "svd"
    ops += [
        GraphOp("loss", "loss", "Mean", "", on_path=True, outputs=[TensorInfo("float32", [])]),
        GraphOp("__target__", "loss", "Target", "", on_path=True),
    ]
    link(prev, "loss")
    link("loss", "__target__")
    problems = (
        []
        if cut_after is None
        else [Problem("unimplemented", "error", "svd", "Svd", "no gradient", variables=[variables[0].name])]
    )
    return Report(
        script="long.py",
        target="loss",
        ok=cut_after is None,
        variables=variables,
        graph=GraphDoc(ops=ops, edges=edges),
        problems=problems,
    )


def _opened(report: Report, size: tuple[int, int] = (1000, 600)) -> GraphView:
    view = GraphView()
    view.resize(*size)
    view.show()
    QApplication.processEvents()
    view.set_report(report)
    QApplication.processEvents()
    return view


def _layers(view: GraphView, n: int) -> list[str]:
    """The layer boxes ``dense_0`` .. ``dense_{n-1}``, in the model's order."""
    h = view.hierarchy
    by_label = {g.label: gid for gid, g in h.groups.items() if g.kind == "layer"}
    return [by_label[f"dense_{i}"] for i in range(n)]


def _on_screen(view: GraphView, rect: QRectF) -> QRectF:
    return QRectF(view.mapFromScene(rect).boundingRect())


def test_a_long_healthy_model_opens_across_the_view(qapp):
    view = _opened(_sequential(30))
    assert view.transform().m11() >= readable_scale() - 1e-9
    vp = QRectF(view.viewport().rect())
    shown = [
        r
        for r in (_on_screen(view, view.node_items[g].sceneBoundingRect()) for g in _layers(view, 30))
        if vp.contains(r)
    ]
    assert len(shown) >= 20, f"{len(shown)} of 30 layers in view"
    across = max(r.right() for r in shown) - min(r.left() for r in shown)
    assert across >= 0.6 * vp.width(), f"the layers in view span {across / vp.width():.0%} of its width"
    assert _on_screen(view, view.node_items[_layers(view, 1)[0]].sceneBoundingRect()).left() < vp.width() / 3


def test_the_chain_reads_down_each_column_then_up_the_gutter_into_the_next(qapp):
    view = _opened(_sequential(30))
    ids = _layers(view, 30)
    rects = [view.node_items[g].sceneBoundingRect() for g in ids]
    boxes = [it.sceneBoundingRect().adjusted(3, 3, -3, -3) for it in view.node_items.values()]
    for i, a in enumerate(boxes):  # no two boxes overlap
        assert not any(a.intersects(b) for b in boxes[i + 1 :])
    jumps = 0
    for i, (a, b) in enumerate(zip(rects, rects[1:])):
        path = view.edge_routes[(ids[i], ids[i + 1])]
        start, end = path.pointAtPercent(0), path.pointAtPercent(1)
        assert abs(start.x() - a.center().x()) < 4 and abs(start.y() - a.bottom()) < 4, ids[i]
        assert abs(end.x() - b.center().x()) < 4 and abs(end.y() - b.top()) < 4, ids[i + 1]
        if b.top() > a.bottom():  # down the same column
            assert abs(b.center().x() - a.center().x()) < 1, (ids[i], ids[i + 1])
            continue
        jumps += 1  # the top of the next column, to the right: the edge runs up between them
        assert b.left() > a.right() + 40
        others = [
            r.adjusted(3, 3, -3, -3)
            for g, it in view.node_items.items()
            if g not in ids[i : i + 2]
            for r in [it.sceneBoundingRect()]
        ]
        for k in range(1, 100):
            p = path.pointAtPercent(k / 100)
            assert not any(r.contains(p) for r in others), f"{ids[i]} → {ids[i + 1]} crosses a box at {p}"
            assert a.right() < p.x() < b.left() or p.y() > a.bottom() or p.y() < b.top()
    assert 3 <= jumps + 1 <= 8, f"{jumps + 1} columns"


def test_a_cut_in_a_long_model_opens_beside_its_variable(qapp):
    """The first view still opens on the problem; wrapped, the cut and the first layer it
    starves fit together at a readable zoom."""
    view = _opened(_sequential(30, cut_after=14))
    h = view.hierarchy
    vp = QRectF(view.viewport().rect())
    cut = view.node_items["svd"]
    first = view.node_items[h.representative("var:model.layers[0].kernel", view.expanded)]
    assert vp.contains(_on_screen(view, cut.sceneBoundingRect()))
    assert vp.contains(_on_screen(view, first.sceneBoundingRect()))
    assert view.transform().m11() >= readable_scale() - 1e-9


def test_short_models_and_open_layers_stay_one_column(qapp):
    view = _opened(_sequential(8))
    assert len({round(view.node_items[g].sceneBoundingRect().center().x()) for g in _layers(view, 8)}) == 1
    view = _opened(_sequential(30))
    view.set_all_expanded(True)  # every layer open: read op by op, scrolling down
    tops = [view.frames[g].sceneBoundingRect().top() for g in _layers(view, 30)]
    assert tops == sorted(tops)


def _residual(blocks: int) -> tuple[list[str], list[tuple[str, str]]]:
    """A ResNet-like chain: each block's input feeds two convolutions and, past them, the add."""
    nodes, edges, prev = ["input"], [], "input"
    for b in range(blocks):
        conv1, conv2, add, out = (f"b{b}_{k}" for k in ("conv1", "conv2", "add", "out"))
        nodes += [conv1, conv2, add, out]
        edges += [(prev, conv1), (conv1, conv2), (conv2, add), (prev, add), (add, out)]
        prev = out
    return nodes, edges


def test_a_column_ends_only_where_one_edge_leaves_it(qapp):
    nodes, edges = _residual(16)
    o = layered.order(nodes, edges)
    size = dict.fromkeys(nodes, OP_SIZE)
    xy, jumps = columns.wrap(o, layered.coordinates(o, size), size, boxes=nodes)
    assert len(jumps) >= 2
    jumped = {(j.src, j.dst) for j in jumps}
    assert all(u.endswith("_add") and v.endswith("_out") for u, v in jumped)  # a block's only exit
    for u, v in edges:
        if (u, v) in jumped:
            assert xy[v][1] < xy[u][1] and xy[v][0] > xy[u][0] + size[u][0]
        else:  # a skip edge is never cut: it runs down its column
            assert xy[v][1] > xy[u][1] + size[u][1], (u, v)
    for j in jumps:  # the gutter is clear of every box, below the column and above the next
        assert not any(x < j.lane < x + size[n][0] for n, (x, _) in xy.items() if n in size)
        assert j.low > xy[j.src][1] + size[j.src][1] and j.high < xy[j.dst][1]
    # the same graph of single ops (no box to end a column at) stays one column
    coords = layered.coordinates(o, size)
    assert columns.wrap(o, coords, size, boxes=()) == (coords, [])


@pytest.mark.parametrize("open_all", [False, True])
def test_the_layout_is_the_same_every_time(open_all):
    report = _sequential(40)
    every = report.variables
    placed = []
    for _ in range(2):
        h = Hierarchy(report.graph, layer_names(every), variable_owners(every))
        s = GraphLayout(h, use_dot=False).place(set(h.groups) if open_all else h.default_expanded())
        placed.append(({n: (p.x, p.y) for n, p in s.nodes.items()}, s.jumps, s.width, s.height))
    assert placed[0] == placed[1]
