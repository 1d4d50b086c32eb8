"""Variables grouped by layer, sorted and filtered; Problems name each op once."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.panels.problems import ProblemsPanel, op_label
from app.panels.variables import SHAPE_LEAST, VariablesPanel, layer_of
from tfviz.report import Problem, ReadNotTrained, Report, VariableReport


def _report(n_layers: int = 8) -> Report:
    vs = []
    for i in range(n_layers):
        for w, g in (("kernel", 10.0**-i), ("bias", 2.0**i)):
            status, kind = ("disconnected", "frozen_copy") if i == 3 else ("connected", None)
            vs.append(
                VariableReport(
                    f"model.layers[{i}].{w}",
                    f"dense_{i}/{w}",
                    "float32",
                    [4, i + 1],
                    status,
                    kind,
                    None if status != "connected" else g,
                )
            )
    return Report(
        script="/x/m.py",
        target="loss",
        variables=vs,
        read_not_trained=[ReadNotTrained("target.kernel", "a separate model")],
    )


def test_many_variables_are_grouped_by_layer_with_worst_status(qapp):
    v = VariablesPanel()
    v.set_report(_report())
    assert v.grouped and v.by_layer.isChecked()
    heads = v.layers()
    assert [h.text(1) for h in heads] == [f"dense_{i}" for i in range(8)]
    assert heads[3].text(2) == "2 variables, 2 without a flowing gradient"
    assert heads[0].text(2) == "2 variables"
    r = _report()  # a vanishing gradient flows: the layer says so, never "without a gradient"
    r.variables[0].magnitude = r.variables[1].magnitude = "vanishing"
    v.set_report(r)
    first = v.layers()[0]
    assert first.text(2) == "2 variables, 2 vanishing"
    assert [row.text(2) for row in v.rows()[:2]] == ["vanishing", "vanishing"]
    v.set_report(_report())
    heads = v.layers()
    assert heads[3].icon(0).cacheKey() != heads[0].icon(0).cacheKey()
    assert [r.text(1) for r in v.rows()][:3] == [
        "model.layers[0].kernel",
        "model.layers[0].bias",
        "model.layers[1].kernel",
    ]
    assert v.rows()[-1].text(1) == "target.kernel"  # greyed, after the others
    # a name too long for its column is cut in the middle, grouped as flat: the head says
    # whose weight it is and the tail which one
    assert v.textElideMode() == Qt.TextElideMode.ElideMiddle
    # a layer row is no variable: the Jacobian menu and the graph get None
    got = []
    v.variableSelected.connect(got.append)
    v.setCurrentItem(heads[1])
    assert got[-1] is None
    assert v.select_name("model.layers[5].bias") and v.current_variable().name == "model.layers[5].bias"


def test_few_variables_stay_flat_with_the_layer_beside_the_path(qapp):
    v = VariablesPanel()
    v.set_report(_report(2))
    assert not v.grouped and not v.layers()
    assert v.topLevelItem(0).data(1, Qt.UserRole + 1) == "dense_0"
    assert layer_of(VariableReport("a", "outer/inner/w:0", "float32", [], "connected")) == "outer/inner"


def test_filter_and_sort(qapp):
    v = VariablesPanel()
    v.set_report(_report(), grouped=False)
    v.filter.setText("frozen")
    assert [r.text(1) for r in v.visible_rows()] == ["model.layers[3].kernel", "model.layers[3].bias"]
    v.filter.setText("dense_5")  # the layer's name matches too
    assert {r.text(1) for r in v.visible_rows()} == {"model.layers[5].kernel", "model.layers[5].bias"}
    v.filter.clear()
    v.sortByColumn(4, Qt.DescendingOrder)  # |grad| as numbers, not text
    rows = [r.text(1) for r in v.rows()]
    assert rows[0] == "model.layers[7].bias" and rows[-1] == "target.kernel"
    v.header().setSortIndicator(-1, Qt.AscendingOrder)  # third click: the report's order again
    assert v.rows()[0].text(1) == "model.layers[0].kernel"
    v.by_layer.setChecked(True)
    v.filter.setText("dense_2")
    shown = [h.text(1) for h in v.layers() if not h.isHidden()]
    assert shown == ["dense_2"]


def test_problems_name_each_op_once(qapp):
    assert op_label("Svd", "f/Svd") == "Svd"
    assert op_label("StopGradient", "StopGradient_2") == "StopGradient_2"
    assert op_label("Cast", "rnn/to_int") == "Cast to_int"
    probs = [
        Problem("unimplemented", "error", "f/Svd", "Svd", "no gradient"),
        Problem("nan", "error", "f/Svd", "Svd", "NaN"),
        Problem("stop_gradient", "error", "g/StopGradient", "StopGradient", "cut"),
    ]
    p = ProblemsPanel()
    p.set_report(Report(script="/x/m.py", target="loss", problems=probs))
    col = [p.topLevelItem(i).text(1) for i in range(3)]
    assert col == ["Svd", "″", "StopGradient"]
    assert p.topLevelItem(1).toolTip(1) == "Svd f/Svd (TensorFlow's name)"


def test_a_weight_keras_holds_frozen_is_listed_as_frozen_not_as_a_separate_model(qapp, tmp_path):
    from tfviz.report import FROZEN_REASON

    r = _report(2)
    r.read_not_trained.append(ReadNotTrained("base.layers[0].kernel", FROZEN_REASON, "base/dense/kernel"))
    v = VariablesPanel()
    v.set_report(r)
    v.resize(720, 260)
    by_name = {row.text(1): row for row in v.rows()}
    assert by_name["base.layers[0].kernel"].text(2) == "read, not trained here: frozen"
    assert "trainable = False" in by_name["base.layers[0].kernel"].toolTip(2)
    assert by_name["target.kernel"].text(2) == "read, not trained here: separate model"
    v.grab().save(str(tmp_path / "frozen.png"))
    assert (tmp_path / "frozen.png").stat().st_size > 0


def _frozen_base(report: Report, n: int) -> list[str]:
    from tfviz.report import FROZEN_REASON

    names = [f"base.layers[{i // 2}].{('kernel', 'bias')[i % 2]}" for i in range(n)]
    report.read_not_trained.extend(
        ReadNotTrained(name, FROZEN_REASON, f"base/d{i}") for i, name in enumerate(names)
    )
    return names


def test_a_frozen_base_is_one_collapsed_row_that_counts_it(qapp, tmp_path):
    r = _report(2)
    names = _frozen_base(r, 6)
    v = VariablesPanel()
    v.set_report(r)
    v.resize(720, 300)
    v.show()
    group = v.topLevelItem(v.topLevelItemCount() - 1)
    assert group.text(1) == "frozen in Keras" and group.text(2) == "6 weights: read, not trained here"
    assert group.toolTip(1) == "6 weights frozen in Keras (trainable = False), as the script asks: 6 of base"
    assert not group.isExpanded()
    assert [group.child(j).text(1) for j in range(group.childCount())] == names
    assert all(group.child(j).text(2) == "read, not trained here: frozen" for j in range(6))
    # the model's own variables stay rows, the separate model's greyed row stays apart
    rows = [row.text(1) for row in v.rows()]
    assert rows[:4] == [
        "model.layers[0].kernel",
        "model.layers[0].bias",
        "model.layers[1].kernel",
        "model.layers[1].bias",
    ]
    assert "target.kernel" in rows and set(names) <= set(rows)
    assert group not in v.layers()
    v.grab().save(str(tmp_path / "frozen_group.png"))

    got, layers = [], []
    v.variableSelected.connect(got.append)
    v.layerSelected.connect(layers.append)
    v.setCurrentItem(group)
    assert got[-1] is None and layers == []  # a group of weights, not a layer to show
    # the filter opens it while it finds weights in it, and closes it when cleared
    v.filter.setText("layers[2]")
    assert group.isExpanded() and not group.isHidden()
    assert [group.child(j).isHidden() for j in range(6)] == [True] * 4 + [False] * 2
    v.filter.clear()
    assert not group.isExpanded()
    # a frozen weight named elsewhere (a problem, a search) is shown in its open group
    assert v.select_name(names[3])
    assert group.isExpanded() and v.current_variable().name == names[3]


def test_grouped_by_layer_a_frozen_base_stays_one_row_after_sorting(qapp):
    r = _report(8)
    _frozen_base(r, 4)
    v = VariablesPanel()
    v.set_report(r)
    assert v.grouped
    group = v.topLevelItem(v.topLevelItemCount() - 1)
    assert group.text(1) == "frozen in Keras" and not group.isExpanded()
    v.sortItems(4, Qt.SortOrder.DescendingOrder)
    v.header().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # third click: the report's order
    last = v.topLevelItem(v.topLevelItemCount() - 1)
    assert last is group and not group.isExpanded()
    assert all(head.isExpanded() for head in v.layers())


def test_a_single_frozen_weight_stays_a_row_of_its_own(qapp):
    r = _report(2)
    _frozen_base(r, 1)
    v = VariablesPanel()
    v.set_report(r)
    assert not any(v.topLevelItem(i).text(1) == "frozen in Keras" for i in range(v.topLevelItemCount()))
    assert v.rows()[-1].text(2) == "read, not trained here: frozen"


def test_a_narrow_variables_panel_keeps_the_names_readable_and_the_norms_whole(qapp):
    """Beside the Jacobian dock the panel is a third of the window: the names were cut to
    ``mo…el``. The gradient column gives way, then the shape down to what a short shape
    needs; the name keeps nearly half the row and the norm stays whole."""
    v = VariablesPanel()
    v.set_report(_report())
    for width in (420, 1000):
        v.box.resize(width, 300)  # the dock holds the filter field and the list
        v.box.show()
        for _ in range(5):  # the columns are fitted once the viewport has its width
            QApplication.processEvents()
        hdr = v.header()
        room = v.viewport().width() - hdr.sectionSize(0)
        assert hdr.sectionSize(1) >= 0.44 * room, (width, [hdr.sectionSize(c) for c in range(5)])
        assert hdr.sectionSize(4) >= v.sizeHintForColumn(4)  # the norm stays whole, and a short shape
        assert hdr.sectionSize(3) >= min(v.sizeHintForColumn(3), SHAPE_LEAST)
        assert sum(hdr.sectionSize(c) for c in range(5)) <= v.viewport().width() + 1
    # wide, every column has its contents' width
    assert all(hdr.sectionSize(c) >= v.sizeHintForColumn(c) for c in (2, 3, 4))


def test_a_long_problem_message_wraps_at_the_panels_edge(qapp):
    """Problems messages were cut at the panel's edge, and their end is often what names the
    cause: the message wraps, its row as tall as it needs, the whole text drawn."""
    from PySide6.QtGui import QFontMetrics

    long = (
        "model.layers[0].weights2 is a copy of the weight made in build() by tf.reshape: the layer"
        " multiplies by this constant copy, so the weight itself never gets a gradient"
    )
    r = Report(script="s.py", target="loss")
    r.problems = [
        Problem(kind="frozen_copy", severity="error", op="copy", op_type="Placeholder", message=long),
        Problem(kind="stop_gradient", severity="error", op="sg", op_type="StopGradient", message="short"),
    ]
    p = ProblemsPanel()
    p.resize(700, 300)
    p.set_report(r)
    p.show()
    for _ in range(5):
        QApplication.processEvents()
    tall, short = (p.visualItemRect(p.topLevelItem(i)).height() for i in range(2))
    width = p.header().sectionSize(3)
    fm = QFontMetrics(p.font())
    lines = -(-fm.horizontalAdvance(long) // width)  # at least this many lines at that width
    assert lines >= 2 and tall >= lines * fm.lineSpacing() > short
    assert p.textElideMode() == Qt.TextElideMode.ElideNone and p.wordWrap()
    p.resize(1800, 300)  # wide: one line again
    for _ in range(5):
        QApplication.processEvents()
    assert p.visualItemRect(p.topLevelItem(0)).height() < tall


def test_clearing_a_grouped_expanded_panel_leaves_it_as_qts_own_clear_does(qapp):
    """The panels clear by taking every row at once (Qt's clear() removes expanded rows one by
    one, in time that grows with the square of the rows): the state left is Qt's own."""
    from PySide6.QtWidgets import QTreeWidget

    states = []
    for clear in (VariablesPanel.clear, QTreeWidget.clear):
        v = VariablesPanel()
        v.set_report(_report(40))
        v.expandAll()
        assert v.select_name("model.layers[5].bias")
        clear(v)
        states.append(
            (v.topLevelItemCount(), v.selectedItems(), v.currentItem(), v.invisibleRootItem().childCount())
        )
        assert v.topLevelItemCount() == 0
        v.set_report(_report(3))  # filled again after either, the same rows
        states.append([r.text(1) for r in v.rows()])
    assert states[0] == states[2] == (0, [], None, 0) and states[1] == states[3]
