"""End to end: the real window and worker on the seed-1 SVD example."""

from __future__ import annotations

import sys

from conftest import EXAMPLES, run_analysis

SEED1 = EXAMPLES / "seed1_svd_dynamic_shape.py"


def test_seed1_lists_svd_problem_and_selects_node_and_line(qtbot, window):
    had_tensorflow = "tensorflow" in sys.modules  # another file's test in this process may import it
    run_analysis(qtbot, window, SEED1)
    assert window.analysis.last_error is None, window.analysis.last_error
    assert window.analysis.report is not None
    first = next(p.source for p in window.analysis.report.problems if p.source)
    assert window.source.marked_line == first.line  # opened where the first problem is
    probs = window.problems
    svd_rows = [
        probs.topLevelItem(i)
        for i in range(probs.topLevelItemCount())
        if "Svd" in probs.topLevelItem(i).text(1)
    ]
    assert svd_rows, "no Svd problem listed"
    problem = svd_rows[0].data(0, 0x0100)
    probs.setCurrentItem(svd_rows[0])
    probs.itemClicked.emit(svd_rows[0], 0)
    view = window.graph.view
    selected = [i.node_id for i in view.scene().selectedItems()]
    assert selected == [problem.op]
    assert window.source.marked_line == problem.source.line
    assert "svd" in window.source.marked_text()
    assert "unimplemented" in window.details.toPlainText()
    # named as its group box
    assert "in contraction_step (tf.function) at seed1_svd_dynamic_shape.py:" in window.details.toPlainText()
    assert had_tensorflow or "tensorflow" not in sys.modules  # the analysis ran in a worker


def test_seed1_variable_highlights_blocking_op(qtbot, window):
    run_analysis(qtbot, window, SEED1)  # its own analysis: no test leans on another's state
    assert window.variables.select_name("upper[0]")
    var = window.variables.currentItem().data(0, 0x0100)
    assert var.status == "broken" and var.kind == "unimplemented"
    assert set(var.blocked_at) <= window.links.current_path_ops
    assert window.graph.view.node_items[var.blocked_at[0]].highlight
