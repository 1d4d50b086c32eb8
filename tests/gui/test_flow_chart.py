"""The gradient-flow chart: bar heights are the report's log10 norms, markers for no
gradient, exactly zero and never updated, reference lines, and a click selects."""

from __future__ import annotations

import math

import pytest

from app.panels.flow_chart import DECADES, FlowChart
from tests.gui.conftest import EXAMPLES, run_analysis
from tfviz.report import Report, VariableReport


def test_bars_markers_and_lines_from_a_report(qapp):
    vs = [VariableReport("a", "a", "float32", [2], "connected", None, 3.0),
          VariableReport("b", "b", "float32", [2], "disconnected", "stop_gradient", None),
          VariableReport("c", "c", "float32", [2], "connected", "zero", 0.0),
          VariableReport("d", "d", "float32", [2], "disconnected", "not_trained", 0.02),
          VariableReport("e", "e", "float32", [2], "connected", None, 1e-7)]
    chart = FlowChart()
    chart.set_report(Report(script="x.py", target="loss", variables=vs))
    assert chart.names == list("abcde")
    assert chart.heights == pytest.approx({"a": math.log10(3.0), "d": math.log10(0.02), "e": -7.0})
    bars = chart.bars.opts
    assert list(bars["y1"]) == pytest.approx([math.log10(3.0), math.log10(0.02), -7.0])
    assert chart.markers == {"b": "none", "c": "zero", "d": "never updated"}
    assert chart.median == pytest.approx(math.log10(0.02))
    assert chart.base < chart.median - DECADES and chart.base <= -7.0
    assert "never updated" in chart.caption.text()


def test_chart_in_the_window_matches_the_report(qtbot, window):
    run_analysis(qtbot, window, EXAMPLES / "kind_stop_gradient_layer.py")
    report = window.report
    chart = window.flow
    assert chart.names == [v.name for v in report.variables]
    for v in report.variables:
        if v.grad_norm:
            assert chart.heights[v.name] == pytest.approx(math.log10(v.grad_norm))
        else:
            assert chart.markers[v.name] == "none"
    i = chart.names.index("head.kernel")
    with qtbot.waitSignal(window.variables.variableSelected, timeout=2000):
        chart.select_index(i)
    assert window.variables.currentItem().text(1) == "head.kernel"
