"""End to end on seed 2: a variable copied at build time is marked frozen_copy and has no path."""

from __future__ import annotations

from conftest import EXAMPLES, run_analysis

SEED2 = EXAMPLES / "seed2_frozen_copy.py"


def test_seed2_frozen_copy_variable_has_no_path(qtbot, window):
    run_analysis(qtbot, window, SEED2)
    assert window.analysis.report is not None, window.analysis.last_error
    frozen = [v for v in window.analysis.report.variables if v.kind == "frozen_copy"]
    assert frozen, "no frozen_copy variable reported"
    var = frozen[0]
    assert window.variables.select_name(var.name)
    row = window.variables.currentItem()
    assert row.text(2) == "none: frozen_copy"  # compact; the full status is in the tooltip
    assert row.toolTip(2).startswith("disconnected (frozen_copy)")
    assert row.text(1) == var.name and var.name in row.toolTip(1)
    # its path ends at the frozen copy: nothing reaches the target
    assert set(var.blocked_at) <= window.links.current_path_ops
    assert "__target__" not in window.links.current_path_ops
    assert window.graph.view.path.cut
    # the copy is named as the script holds it, in the graph and in the path's Details
    details = window.details.toPlainText()
    assert "model.layers[0].weights2 (Placeholder)" in details and "MatMul/b" not in details
    assert window.graph.view.hierarchy.title(var.blocked_at[0]) == "model.layers[0].weights2"
    # a connected variable, by contrast, lights up its path to the target
    ok = next(v for v in window.analysis.report.variables if v.status == "connected")
    window.variables.select_name(ok.name)
    assert "__target__" in window.links.current_path_ops
    assert window.graph.view.highlighted_edges > 0
