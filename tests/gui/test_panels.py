"""Variables grouped by layer, sorted and filtered; Problems name each op once."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.panels.problems import ProblemsPanel, op_label
from app.panels.variables import VariablesPanel, layer_of
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
