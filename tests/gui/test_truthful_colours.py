"""Colours that tell the truth: no green where no gradient arrives, harmless cuts muted,
merged edges from their on-path members, problems visible at every zoom."""

from __future__ import annotations

from PySide6.QtGui import QColor

from app.graph.palette import QUIET, STYLES
from app.graph.view import GraphView
from tests.gui.conftest import EXAMPLES, run_analysis
from tests.gui.test_render import _count, render_view
from tfviz.report import GraphDoc, GraphEdge, GraphOp, Report
from tfviz.structure.hierarchy import Hierarchy


def _starved_report() -> Report:
    ops = [
        GraphOp(
            "var:w",
            "w",
            "Variable",
            "enc",
            on_path=True,
            is_variable=True,
            status="starved",
            cut_at="sg",
            message="no gradient arrives here: cut at StopGradient 'sg'",
        ),
        GraphOp("mm", "mm", "MatMul", "enc", on_path=True, status="starved", cut_at="sg"),
        GraphOp("sg", "sg", "StopGradient", "", on_path=True, status="stop_gradient"),
        GraphOp("__target__", "loss", "Target", "", on_path=True),
    ]
    edges = [
        GraphEdge("var:w", "mm", 0, 0, "float32", [4], status="starved", cut_at="sg"),
        GraphEdge("mm", "sg", 0, 0, "float32", [4], status="stop_gradient"),
        GraphEdge("sg", "__target__", 0, 0, "float32", [], status="passes"),
    ]
    return Report(script="x.py", target="loss", graph=GraphDoc(ops=ops, edges=edges))


def test_starved_edge_is_not_green(qapp):
    view = GraphView()
    view.resize(500, 700)
    view.show()
    view.set_report(_starved_report())
    view.set_all_expanded(True)
    img = render_view(view)
    green, muted = QColor(STYLES["passes"].color), QColor(STYLES["starved"].color)
    starved = view.edge_routes[("var:w", "mm")]
    assert view.edge_cats[("var:w", "mm")] == "starved"
    for frac in (0.3, 0.5, 0.7):
        pt = view.mapFromScene(starved.pointAtPercent(frac))
        assert _count(img, pt.x(), pt.y(), green) == 0, f"green pixels on a starved edge at {frac}"
        assert _count(img, pt.x(), pt.y(), muted, r=4) >= 2, f"no muted pixels at {frac}"
    ok = view.mapFromScene(view.edge_routes[("sg", "__target__")].pointAtPercent(0.3))
    assert _count(img, ok.x(), ok.y(), green) >= 3  # the probe does see green where it is


def test_group_badge_counts_starved_variables(qapp):
    h = Hierarchy(_starved_report().graph)
    enc = next(g for g in h.groups.values() if g.label == "enc")
    assert enc.problems == {"starved": 1}


def test_merged_edge_ignores_off_path_members_and_unneeded_cuts(qapp):
    ops = [
        GraphOp("var:w", "w", "Variable", "", on_path=True, is_variable=True),
        GraphOp("a", "a", "MatMul", "blk", on_path=True),
        GraphOp("shape", "shape", "Shape", "blk", on_path=False),
        GraphOp("sg", "sg", "StopGradient", "blk", on_path=True),
        GraphOp("__target__", "loss", "Target", "", on_path=True),
    ]
    edges = [
        GraphEdge("var:w", "a", 0, 0, "float32", [4], status="passes"),
        GraphEdge("a", "sg", 0, 0, "float32", [4], status="stop_gradient", needed=False),
        GraphEdge("a", "__target__", 0, 1, "float32", [], status="passes"),
        GraphEdge("sg", "__target__", 0, 2, "float32", [], status="passes"),
        GraphEdge("shape", "__target__", 0, 0, "int32", [], status="off_path"),
    ]
    view = GraphView()
    view.set_report(Report(script="x.py", target="loss", graph=GraphDoc(ops=ops, edges=edges)))
    blk = next(g for g in view.hierarchy.groups if view.hierarchy.groups[g].label == "blk")
    view.expanded.discard(blk)
    view.rebuild()
    assert view.edge_cats[(blk, "__target__")] == "passes"  # not the off-path integer edge
    view.set_all_expanded(True)
    assert view.edge_cats[("a", "sg")] == "muted"


def test_problem_ops_keep_their_colour_when_zoomed_out(qapp):
    view = GraphView()
    view.resize(400, 400)
    view.show()
    view.set_report(_starved_report())
    view.set_all_expanded(True)
    view.resetTransform()
    view.scale(0.01, 0.01)
    view.centerOn(view.node_items["sg"])
    img = render_view(view)
    c = view.mapFromScene(view.node_items["sg"].sceneBoundingRect().center())
    assert _count(img, c.x(), c.y(), QColor(STYLES["stop_gradient"].color), r=3) >= 30


def test_healthy_batchnorm_model_shows_no_bug_styled_edge(qtbot, window):
    run_analysis(qtbot, window, EXAMPLES / "healthy_batchnorm.py")
    assert window.analysis.report is not None and window.analysis.report.ok
    view = window.graph.view
    for expand in (False, True):
        view.set_all_expanded(expand)
        cats = set(view.edge_cats.values())
        assert cats <= QUIET, cats
    assert "muted" in cats  # BatchNorm's moments: its stop_gradient is drawn, but muted
    assert not [m for m in view.scene().items() if m.toolTip().startswith(STYLES["stop_gradient"].label)]


def test_starved_layer_in_the_app(qtbot, window):
    run_analysis(qtbot, window, EXAMPLES / "kind_stop_gradient_layer.py")
    view = window.graph.view
    view.set_all_expanded(True)
    starved = [ab for ab, c in view.edge_cats.items() if c == "starved"]
    assert any(a.startswith("var:encoder") for a, _ in starved)
    assert "passes" not in {view.edge_cats[ab] for ab in view.edge_cats if ab[0].startswith("var:encoder")}
    window.details.show_op(window.analysis.report, 'var:encoder.get_layer("enc_1").kernel')
    assert "cut at StopGradient" in window.details.toPlainText()
