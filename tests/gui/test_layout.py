"""Window layout as a user meets it: fits a laptop screen, says what empty panels are for,
never shows machine paths."""

from __future__ import annotations

import os

from conftest import EXAMPLES, run_analysis
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication, QGraphicsSceneHelpEvent

from app.graph.view import GraphView
from app.panels.docks import DetailsPanel
from app.panels.problems import ProblemsPanel
from app.panels.variables import VariablesPanel
from tfviz.report import GraphDoc, GraphOp, Problem, Report, Source, VariableReport

SEED1 = EXAMPLES / "seed1_svd_dynamic_shape.py"


def test_window_fits_a_1280x800_screen(qtbot, window):
    try:
        window.resize(1280, 800)
        qtbot.waitUntil(lambda: window.width() <= 1280, timeout=2000)
        QApplication.processEvents()
        assert window.width() <= 1280 and window.height() <= 800
        assert window.minimumSizeHint().width() <= 1280
        # every column of the Variables list is on screen at the default layout (which an
        # earlier test may have changed: docks resized, a floating window's layout saved)
        window._default_dock_sizes(force=True)
        QApplication.processEvents()
        v = window.variables
        assert v.viewport().width() >= sum(v.header().sectionSize(c) for c in range(5)) - 2
    finally:
        window.resize(1400, 900)


def test_empty_panels_say_what_they_are_for(qapp):
    v, p, d = VariablesPanel(), ProblemsPanel(), DetailsPanel()
    assert "Open a script" in v.placeholder and "Problems appear here" in p.placeholder
    assert "select an op" in d.toPlainText().lower()
    report = Report(script="/somewhere/deep/x.py", target="loss")
    v.set_report(report)
    p.set_report(report)
    assert v.placeholder == "The target reads no trainable variable."
    assert p.placeholder.startswith("No problems")


def _report(folder: str) -> Report:
    src = Source(os.path.join(folder, "model.py"), 21, "s = tf.linalg.svd(x)")
    ops = [
        GraphOp("svd", "svd", "Svd", "", on_path=True, status="unimplemented", source=src),
        GraphOp("__target__", "loss", "Target", "", on_path=True),
    ]
    return Report(
        script=os.path.join(folder, "model.py"),
        target="loss",
        graph=GraphDoc(ops=ops),
        variables=[
            VariableReport(
                "model.layers[0].trainable_variables[0]", "w:0", "float32", [3, 3], "broken", "unimplemented"
            )
        ],
        problems=[Problem("unimplemented", "error", "svd", "Svd", "no gradient", source=src)],
    )


def test_paths_are_shown_relative_to_the_script(qapp, tmp_path):
    folder = str(tmp_path / "projects" / "mine")
    report = _report(folder)
    d, p = DetailsPanel(), ProblemsPanel()
    d.show_op(report, "svd")
    p.set_report(report)
    assert "model.py:21" in d.toPlainText() and folder not in d.toPlainText()
    assert folder in d.toolTip()  # the full path is still one hover away
    assert p.topLevelItem(0).text(2) == "model.py:21" and folder in p.topLevelItem(0).toolTip(2)
    view = GraphView()
    view.set_report(report)
    item = view.node_items["svd"]
    assert item.toolTip() == ""  # made on hover, not for each box of a large graph
    help_event = QGraphicsSceneHelpEvent(QEvent.Type.GraphicsSceneHelp)
    help_event.setScenePos(item.sceneBoundingRect().center())
    view.scene().helpEvent(help_event)  # what Qt calls when the pointer rests on the box
    tip = item.toolTip()
    assert "model.py:21" in tip and folder not in tip and item.tip() == tip


def test_error_banner_shows_the_file_name_only(qtbot, window, tmp_path):
    bad = tmp_path / "broken_script.py"
    bad.write_text("import tensorflow as tf\n\nraise RuntimeError('nope')\n")
    run_analysis(qtbot, window, bad)
    assert window.analysis.last_error is not None
    shown = window.banner.title.text()
    assert "broken_script.py" in shown
    visible = shown.split("'>", 1)[-1]  # the link target may hold the path; the text may not
    assert str(tmp_path) not in visible
    run_analysis(qtbot, window, SEED1)  # leave the window on a normal report for later tests


def test_a_report_without_a_graph_says_why_in_place_of_the_graph(qapp):
    """An untraceable step (model.predict inside the tape) leaves no graph: the view says so
    rather than keep "Analyzing…" from the run that ended."""
    view = GraphView()
    view.set_placeholder("Analyzing x.py…")
    view.set_report(Report(script="x.py", target="tape.gradient", mode="program", traced=False))
    assert view.placeholder.startswith("No graph: the step could not be traced")
    view.set_report(Report(script="x.py", target="loss"))
    assert view.placeholder == "No graph: the target makes no op."
