"""The gradient-flow chart: bar heights are the magnitude rule's measure (log10 of the gradient
per element), markers for no gradient, exactly zero and never updated, the rule's reference
lines, layer names on the axis, and a click selects."""

from __future__ import annotations

import math

import pytest

from app.panels.flow_chart import DECADES, FlowChart, log_size
from tests.gui.conftest import EXAMPLES, run_analysis
from tfviz.report import Report, VariableReport


def test_bars_markers_and_lines_from_a_report(qapp):
    vs = [
        VariableReport("a", "a", "float32", [4], "connected", None, 3.0),
        VariableReport("b", "b", "float32", [4], "disconnected", "stop_gradient", None),
        VariableReport("c", "c", "float32", [4], "connected", "zero", 0.0),
        VariableReport("d", "d", "float32", [4], "disconnected", "not_trained", 0.02),
        VariableReport("e", "e", "float32", [4], "connected", None, 1e-7),
        VariableReport("f", "f", "float32", [4], "connected", None, 0.5),
    ]
    chart = FlowChart()
    chart.set_report(Report(script="x.py", target="loss", variables=vs))
    assert chart.names == list("abcdef")
    half = math.log10(0.5)  # sqrt(4) elements: the bar is the gradient per element
    want = {
        "a": math.log10(3.0) + half,
        "d": math.log10(0.02) + half,
        "e": -7.0 + half,
        "f": math.log10(0.5) + half,
    }
    assert chart.heights == pytest.approx(want)
    assert list(chart.bars.opts["y1"]) == pytest.approx(list(want.values()))
    assert chart.markers == {"b": "none", "c": "zero", "d": "never updated"}
    # a cut inside tf.while_loop gives zeros, not None: the marker follows the status
    looped = VariableReport("g", "g", "float32", [4], "disconnected", "integer", 0.0)
    chart.set_report(Report(script="x.py", target="loss", variables=[*vs, looped]))
    assert chart.markers["g"] == "none" and "○ 1 exactly zero" in chart.caption.text()
    chart.set_report(Report(script="x.py", target="loss", variables=vs))
    # no graph: the reference is the median of the judged three (a, e, f), all of one kind
    assert set(chart.references) == set("abcdef")
    assert all(r == pytest.approx(want["f"]) for r in chart.references.values())
    assert chart.base < want["f"] - DECADES and chart.base <= want["e"]
    assert "never updated" in chart.caption.text()


def test_bars_past_the_lines_are_the_variables_the_rule_flags(qapp):
    """The chart draws the engine's rule: a bar beyond a dotted line is a vanishing or
    exploding variable, in its colour, and every flagged variable's bar is beyond one."""
    from tfviz.engine.magnitude import judge_magnitudes

    norms = [1.0, 0.5, 2.0, 1e-7, 3e5, 0.8]
    vs = [
        VariableReport(f"v{i}", f"layer{i}/kernel", "float32", [1], "connected", None, g)
        for i, g in enumerate(norms)
    ]
    report = Report(script="x.py", target="loss", variables=vs)
    report.problems = judge_magnitudes(report.variables, report.graph)
    chart = FlowChart()
    chart.set_report(report)
    assert {v.name: v.magnitude for v in vs if v.magnitude} == {"v3": "vanishing", "v4": "exploding"}
    for v in vs:
        beyond = abs(chart.heights[v.name] - chart.references[v.name]) > DECADES
        assert beyond == (v.magnitude is not None)
        assert chart.looks[v.name] == (v.magnitude or "connected")
    assert "↓ 1 vanishing" in chart.caption.text() and "↑ 1 exploding" in chart.caption.text()
    assert [t for _, t in chart.layer_starts] == [f"layer{i}" for i in range(6)]
    # the three lines are named above the chart, not over its bars
    import pyqtgraph as pg

    assert not [i for i in chart.plot.getPlotItem().items if isinstance(i, pg.TextItem)]
    key = chart.key.text()
    assert not chart.key.isHidden() and f"+{DECADES:g} decades: exploding" in key
    assert f"−{DECADES:g} decades: vanishing" in key and "reference" in key
    chart.set_report(None)
    assert chart.key.isHidden()


def test_kernels_are_compared_with_kernels_and_biases_with_biases(qapp):
    """Every kernel's gradient is huge and alike (large activations), the biases' far smaller
    but one. Compared with all variables at once the biases would all look vanishing; like with
    like, only that one bias is out of scale, and each bar's lines are its own kind's."""
    from tfviz.engine.magnitude import judge_magnitudes

    kernels = [
        VariableReport(f"k{i}", f"l{i}/kernel", "float32", [1, 1], "connected", None, 1e14) for i in range(6)
    ]
    biases = [
        VariableReport(f"b{i}", f"l{i}/bias", "float32", [1], "connected", None, g)
        for i, g in enumerate([1e16, 1e8, 1e8, 1e8, 1e8, 1e8])
    ]
    vs = [v for pair in zip(kernels, biases) for v in pair]
    report = Report(script="x.py", target="loss", variables=vs)
    report.problems = judge_magnitudes(report.variables, report.graph)
    assert {v.name: v.magnitude for v in vs if v.magnitude} == {"b0": "exploding"}
    (p,) = report.problems
    assert p.kind == "exploding" and "their own kind" in p.message
    chart = FlowChart()
    chart.set_report(report)
    assert chart.references["k0"] == pytest.approx(14.0) and chart.references["b0"] == pytest.approx(8.0)
    for v in vs:
        beyond = abs(chart.heights[v.name] - chart.references[v.name]) > DECADES
        assert beyond == (v.magnitude is not None)


def test_chart_in_the_window_matches_the_report(qtbot, window):
    run_analysis(qtbot, window, EXAMPLES / "kind_stop_gradient_layer.py")
    report = window.analysis.report
    chart = window.flow
    assert chart.names == [v.name for v in report.variables]
    for v in report.variables:
        if v.grad_norm:
            assert chart.heights[v.name] == pytest.approx(log_size(v))
        else:
            assert chart.markers[v.name] == "none"
    i = chart.names.index("head.kernel")
    with qtbot.waitSignal(window.variables.variableSelected, timeout=2000):
        chart.select_index(i)
    assert window.variables.currentItem().text(1) == "head.kernel"
