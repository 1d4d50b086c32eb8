"""Variables the training step never updates: their own icon and words in
Variables, their read op marked in the graph; separate models listed greyed."""

from __future__ import annotations

from PySide6.QtGui import QColor

from app.graph.palette import STATUS_ICON_COLOR, STYLES
from app.panels.docks import ROLE
from tests.gui.conftest import EXAMPLES, run_analysis


def _rows(window):
    t = window.variables
    return [t.topLevelItem(i) for i in range(t.topLevelItemCount())]


def test_not_trained_variables_marked_in_list_and_graph(qtbot, window):
    run_analysis(qtbot, window, EXAMPLES / "untrained_forgotten_decoder.py")
    report = window.analysis.report
    assert report is not None, window.analysis.last_error
    bad = {v.name for v in report.variables if v.kind == "not_trained"}
    assert bad, "the engine reports the forgotten decoder"
    rows = {it.text(1): it for it in _rows(window)}
    for name in bad:
        it = rows[name]
        assert it.text(2) == "not trained"
        assert "never updates" in it.toolTip(2) and "tape.gradient" in it.toolTip(2)
        assert it.foreground(2).color() != QColor(STATUS_ICON_COLOR["connected"])
    ok_names = {v.name for v in report.variables} - bad
    assert all(rows[n].text(2) == "flows" for n in ok_names)
    assert rows[next(iter(bad))].icon(0).cacheKey() != rows[next(iter(ok_names))].icon(0).cacheKey()
    # the graph marks each not_trained variable's read op (the problem's op), and its node
    view = window.graph.view
    reads = [p.op for p in report.problems if p.kind == "not_trained"]
    assert reads and all(view.hierarchy.ops[r].status == "not_trained" for r in reads)
    item = view.reveal(reads[0])
    assert item.far_cat == "not_trained" and item._border.color() == QColor(STYLES["not_trained"].color)
    var_item = view.reveal(f"var:{next(iter(bad))}")
    assert var_item.status == "not_trained"


def test_separate_model_listed_greyed_without_problem(qtbot, window):
    run_analysis(qtbot, window, EXAMPLES / "healthy_dqn_target.py")
    report = window.analysis.report
    assert report is not None, window.analysis.last_error
    assert report.read_not_trained and not [p for p in report.problems if p.kind == "not_trained"]
    rows = {it.text(1): it for it in _rows(window)}
    for r in report.read_not_trained:
        it = rows[r.name]
        assert it.text(2).startswith("read, not trained here")
        assert r.reason in it.toolTip(2)
        assert it.foreground(1).color() == QColor("#8A8A8A")
    trained = [it for it in _rows(window) if it.data(0, ROLE).status == "connected"]
    assert len(trained) == len(report.variables)
    # the greyed rows come after the model's own variables
    order = [it.data(0, ROLE).status for it in _rows(window)]
    assert order == sorted(order, key=lambda s: s == "read_not_trained")
    window.variables.setCurrentItem(rows[report.read_not_trained[0].name])  # selecting one is safe
