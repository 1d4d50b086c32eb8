"""Target picker ranks loss-like names first, others behind "more…"; a failed analysis
greys the previous results with a banner line."""

from __future__ import annotations

from PySide6.QtWidgets import QGraphicsColorizeEffect

from app.analysis_bar import MORE, AnalysisBar, rank_targets
from tfviz.report import Report, VariableReport


def _entries(bar):
    return [bar.combo.itemText(i) for i in range(bar.combo.count())]


def test_picker_ranks_loss_first_and_hides_builders(qtbot):
    bar = AnalysisBar()
    qtbot.addWidget(bar)
    bar.configure(["make_generator", "probe", "disc_loss", "loss", "build_model"], False, "loss")
    assert _entries(bar) == ["First gradient step", "loss()", "disc_loss()", "more… (3)"]
    assert bar.combo.currentText() == "loss()"
    got = []
    bar.choiceMade.connect(got.append)
    bar._activated(bar.combo.findData(MORE))  # "more…" lists the rest, chooses nothing
    assert not got and bar.combo.currentText() == "loss()"
    assert _entries(bar)[3:] == ["make_generator()", "probe()", "build_model()"]
    bar.combo.hidePopup()
    # no loss-like name: plain names all listed, builders still behind "more…"
    bar.configure(["a", "b", "make_dataset"], False, "a")
    assert _entries(bar) == ["First gradient step", "a()", "b()", "more… (1)"]
    # the current target is always listed
    assert rank_targets(["loss", "probe"], current="probe") == (["loss", "probe"], [])


def test_failed_analysis_greys_previous_results(qtbot, window):
    report = Report(
        script="/x/m.py",
        target="gen_loss",
        ok=True,
        variables=[VariableReport("w", "dense/w", "float32", [2], "connected", None, 1.0)],
    )
    window.analysis.report = report
    window.show_report(report)
    assert window.graph.view.graphicsEffect() is None
    window.analysis._error({"message": "make_generator() takes 1 positional argument"})
    assert window.staleness.on
    for w in (window.graph.view, window.variables.box, window.problems):
        eff = w.graphicsEffect()
        assert isinstance(eff, QGraphicsColorizeEffect) and eff.strength() > 0.5
    text = window.banner.plain_text()
    assert "previous analysis (gen_loss())" in text and "out of date" in text
    window.show_report(report)  # the next result is current again
    assert not window.staleness.on and window.variables.box.graphicsEffect() is None
    window.banner.hide()
