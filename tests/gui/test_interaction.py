"""Target picker, re-analysis on save, and the gradient-magnitude overlay."""

from __future__ import annotations

import math
import time

from conftest import ANALYSIS_TIMEOUT_MS, drawn, run_analysis
from PySide6.QtCore import Qt

from app.graph.palette import magnitude_pen, pen_for
from app.graph.panel import GraphPanel
from tfviz.report import GraphDoc, GraphEdge, GraphOp, Report

TWO_TARGETS = """\
import tensorflow as tf

w = tf.Variable(2.0, name="w")


def a():
    return w * 3.0


def b():
    return tf.square(w) * {scale}
"""


def test_target_picker_then_reanalysis_on_save(qtbot, window, tmp_path):
    script = tmp_path / "two_targets.py"
    script.write_text(TWO_TARGETS.format(scale=1.0))
    run_analysis(qtbot, window, script)
    # no `loss`: it runs as a program, which computes no gradient; the banner says so and
    # offers both functions (so does the analysis bar, after "First gradient step")
    assert window.analysis.report is None and window.analysis.last_error is not None
    banner = window.banner
    assert banner.isVisible() and "without computing a gradient" in banner.plain_text()
    assert "Or differentiate one of its functions" in banner.plain_text()
    assert [window.target_combo.itemText(i) for i in range(window.target_combo.count())] == [
        "First gradient step",
        "a()",
        "b()",
    ]
    assert [banner.targets.itemText(i) for i in range(banner.targets.count())] == ["a", "b"]
    assert banner.pick.isVisible()
    banner.targets.setCurrentText("b")
    qtbot.mouseClick(banner.pick, Qt.LeftButton)
    a = window.analysis
    qtbot.waitUntil(lambda: not a.busy() and bool(a.report or a.last_error), timeout=ANALYSIS_TIMEOUT_MS)
    assert window.analysis.last_error is None, window.analysis.last_error
    assert window.analysis.report.target == "b" and not banner.isVisible()
    assert window.target_combo.isVisible() and window.target_combo.currentText() == "b()"
    first = window.analysis.report
    norm = first.variables[0].grad_norm  # d/dw of w**2 at 2 = 4
    assert math.isclose(norm, 4.0, rel_tol=1e-4)

    # saving the file re-runs the analysis of the same target
    time.sleep(0.05)
    script.write_text(TWO_TARGETS.format(scale=10.0))
    a = window.analysis
    qtbot.waitUntil(
        lambda: a.report is not first and a.report is not None and not a.busy(), timeout=ANALYSIS_TIMEOUT_MS
    )
    assert window.analysis.report.target == "b"
    assert math.isclose(window.analysis.report.variables[0].grad_norm, 40.0, rel_tol=1e-4)


def _report() -> Report:
    ops = [
        GraphOp("var:w", "w", "Variable", "", on_path=True, is_variable=True),
        GraphOp("read", "read", "Identity", "", on_path=True),  # a weight read would be drawn as w
        GraphOp("mul", "mul", "Mul", "", on_path=True),
        GraphOp("shape", "shape", "Shape", "", on_path=False),
        GraphOp("__target__", "loss", "Target", "", on_path=True),
    ]
    edges = [
        GraphEdge("var:w", "read", 0, 0, "resource", [], status="passes", grad_norm=1e-4),
        GraphEdge("read", "mul", 0, 0, "float32", [3], status="passes", grad_norm=1e-2),
        GraphEdge("mul", "__target__", 0, 0, "float32", [], status="passes", grad_norm=1e2),
        GraphEdge("read", "shape", 0, 0, "float32", [3], status="off_path"),
        # the tensor's norm, from its other reader: no gradient arrives along this edge
        GraphEdge("read", "starved", 0, 0, "float32", [3], status="starved", grad_norm=1e3),
    ]
    ops.append(GraphOp("starved", "starved", "Exp", "", on_path=True, status="starved"))
    return Report(script="x.py", target="loss", graph=GraphDoc(ops=ops, edges=edges))


def test_gradient_magnitude_overlay_sets_edge_pens(qapp):
    panel = GraphPanel()
    view = panel.view
    view.set_report(_report())
    big, mid, small, none = (("mul", "__target__"), ("read", "mul"), ("var:w", "read"), ("read", "shape"))
    assert view.edge_items[big].pen().color() == pen_for("passes").color()  # status colours first
    panel.magnitude.setChecked(True)
    drawn(view)
    assert view.magnitude
    pens = {k: view.edge_items[k].pen() for k in (big, mid, small, none)}
    # log10 norms -4, -2, 2: the largest is the widest and yellowest, the smallest the thinnest
    assert pens[big].widthF() > pens[mid].widthF() > pens[small].widthF()
    assert math.isclose(pens[big].widthF(), 6.0) and math.isclose(pens[small].widthF(), 1.0)
    assert pens[big].color() == magnitude_pen(1e2, -4, 2).color()
    assert pens[big].color().green() > pens[small].color().green()
    assert pens[mid].color() == magnitude_pen(1e-2, -4, 2).color()
    assert pens[none].style() != Qt.SolidLine and pens[none].color().name() == "#cccccc"  # no value measured
    starved = view.edge_items[("read", "starved")].pen()  # drawn as carrying nothing, and not
    assert starved.style() != Qt.SolidLine and starved.color().name() == "#cccccc"  # the scale's top
    panel.magnitude.setChecked(False)
    drawn(view)
    assert view.edge_items[big].pen().color() == pen_for("passes").color()
