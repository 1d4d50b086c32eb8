"""The `zero` kind (a warning: connected, but the gradient is exactly 0 at these values)
is shown as its own thing everywhere, never as a plain "connected" tick."""

from __future__ import annotations

from conftest import EXAMPLES, run_analysis
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel

from app.graph.palette import STYLES, status_icon


def _rows(tree):
    return {tree.topLevelItem(i).text(1): tree.topLevelItem(i) for i in range(tree.topLevelItemCount())}


def test_dead_relu_and_zero_factor_are_shown_as_zero(qtbot, window):
    run_analysis(qtbot, window, EXAMPLES / "kind_zero_dead_relu.py")
    assert window.analysis.report is not None, window.analysis.last_error
    rows = _rows(window.variables)
    tick = status_icon("connected").cacheKey()
    assert rows["w"].text(2) == "flows" and rows["w"].icon(0).cacheKey() == tick
    for name, op in (("dead", "Relu"), ("muted", "mul")):
        row = rows[name]
        assert row.text(2) == f"zero: {op}"
        assert row.icon(0).cacheKey() == status_icon("zero").cacheKey() != tick
        assert "exactly zero" in row.toolTip(0) and "warning" in row.toolTip(0)
        assert "dead ReLU" in row.toolTip(2) or "other factor is zero" in row.toolTip(2)
    kinds = [window.problems.topLevelItem(i).text(0) for i in range(window.problems.topLevelItemCount())]
    assert kinds == ["0 zero", "0 zero"]
    assert window.problems.topLevelItem(0).toolTip(0).startswith("warning:")
    assert "2 with a zero gradient" in window.stage.text()
    assert "all gradients flow" not in window.stage.text()

    # Selecting the variable shows, in Details, the op that zeroes its gradient.
    window.variables.select_name("dead")
    details = window.details.toPlainText()
    assert "Relu" in details and "a warning: the gradient is exactly 0" in details
    assert "dead ReLU" in details

    # The graph draws the op in the zero style (sky blue, marker 0); the legend names it.
    node = window.graph.view.node_items.get("Relu")
    if node is None:  # collapsed into a group: the group's badge counts it
        assert any("zero" in (it.badges or {}) for it in window.graph.view.node_items.values())
    else:
        assert node._marker == "0" and node._border.color() == QColor(STYLES["zero"].color)
    legend = [lb.text() for lb in window.graph.legend.findChildren(QLabel)]
    assert any(t.endswith("zero") and ">0<" in t for t in legend), legend


def test_untaken_cond_branch_is_shown_as_zero(qtbot, window):
    run_analysis(qtbot, window, EXAMPLES / "kind_zero_cond.py")
    assert window.analysis.report is not None, window.analysis.last_error
    rows = _rows(window.variables)
    assert rows["fallback"].text(2) == "zero: cond"
    assert "not taken" in rows["fallback"].toolTip(2)
    assert rows["w"].text(2) == "flows"
