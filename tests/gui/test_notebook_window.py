"""A notebook in the window: opened as a script is, Problems and the banner say cells, the
Source panel shows the code cells and marks the line inside its cell."""

from __future__ import annotations

from conftest import EXAMPLES, run_analysis

from app.start_page import bundled_examples

SEED2 = EXAMPLES / "notebook_seed2_fit.ipynb"


def test_the_seed2_notebook_opens_on_its_cell(qtbot, window):
    run_analysis(qtbot, window, SEED2)
    assert window.analysis.last_error is None, window.analysis.last_error
    report = window.analysis.report
    (p,) = [p for p in report.problems if p.kind == "frozen_copy"]
    assert p.source is not None and p.source.cell_name == "cell 3 [2]"
    rows = [window.problems.topLevelItem(i) for i in range(window.problems.topLevelItemCount())]
    assert rows[0].text(2) == f"notebook_seed2_fit.ipynb cell 3 [2], line {p.source.cell_line}"
    # the Source panel: the code cells under their names, not the notebook's JSON
    text = window.source.toPlainText()
    assert "── cell 3 [2] ──" in text and '"cell_type"' not in text
    assert window.source.marked_line == p.source.line  # opened on the problem
    assert "self.weights2 = tf.reshape" in window.source.marked_text()
    assert any(n.startswith("notebook_seed2_fit.ipynb cell 2 [1], line 1: skipped") for n in report.notes)


def test_the_start_page_offers_the_notebook_with_its_first_sentence():
    from app.start_page import _first_doc_line

    assert SEED2 in bundled_examples()
    assert _first_doc_line(SEED2).startswith("A Keras layer reshapes its weight in `build()`")


def test_saving_the_notebook_runs_it_again(qtbot, window, tmp_path):
    import math
    import time

    import nbformat
    from conftest import ANALYSIS_TIMEOUT_MS
    from nbformat.v4 import new_code_cell, new_notebook

    def write(scale: float) -> None:
        nb = new_notebook(
            cells=[
                new_code_cell("import tensorflow as tf\nw = tf.Variable(2.0)"),
                new_code_cell(f"def loss():\n    return {scale} * w ** 2"),
            ]
        )
        nbformat.write(nb, str(path))

    path = tmp_path / "scaled.ipynb"
    write(1.0)
    run_analysis(qtbot, window, path, target="loss")
    assert window.analysis.last_error is None, window.analysis.last_error
    first = window.analysis.report
    assert math.isclose(first.variables[0].grad_norm, 4.0, rel_tol=1e-4)  # d/dw w**2 at 2
    time.sleep(0.05)
    write(10.0)
    a = window.analysis
    qtbot.waitUntil(
        lambda: a.report is not first and a.report is not None and not a.busy(), timeout=ANALYSIS_TIMEOUT_MS
    )
    assert math.isclose(window.analysis.report.variables[0].grad_norm, 40.0, rel_tol=1e-4)
