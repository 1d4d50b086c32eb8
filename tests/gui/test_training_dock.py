"""The Training dock: a watched run (Run until…) drawn live, per layer, on log scales; the step
where a rule fired marked; "Diagnose step N" from a click, keeping the record; Cancel.

The first tests feed the dock synthetic ``steps`` points (no TensorFlow); the last ones go
through a real worker."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
from conftest import ANALYSIS_TIMEOUT_MS, EXAMPLES
from PySide6.QtCore import QPointF, QSettings, Qt
from PySide6.QtWidgets import QLabel, QPushButton
from test_failures import _alive

from app.panels.training import (
    MISSING,
    SHORTCUT,
    RunUntilDialog,
    TrainingPanel,
    TrainingRecord,
    WatchRequest,
)
from app.worker_client import UNBOUNDED, Worker
from tfviz.report import Report, WatchSummary

NAN, INF = float("nan"), float("inf")


def _point(step: int, grad: dict, update: dict | None = None, weight: dict | None = None) -> dict:
    return {
        "step": step,
        "grad": grad,
        "update": update if update is not None else {k: 0.01 for k in grad},
        "weight": weight if weight is not None else {k: 2.0 for k in grad},
    }


def _xs(item) -> list[float]:
    """The steps an item draws (none: pyqtgraph keeps None for empty data)."""
    x = item.getOriginalDataset()[0]
    return [] if x is None else x.tolist()


def _panel(qtbot) -> TrainingPanel:
    p = TrainingPanel()
    qtbot.addWidget(p)
    p.resize(1200, 420)
    p.show()
    return p


def test_empty_dock_says_how_to_start(qtbot):
    p = _panel(qtbot)
    assert p.pages.currentWidget() is p.empty
    text = " ".join(w.text() for w in p.empty.findChildren(QLabel))
    assert "Run until…" in text and SHORTCUT in text
    with qtbot.waitSignal(p.runRequested, timeout=1000):
        p.empty.findChildren(QPushButton)[0].click()


def test_curves_per_layer_on_log_scales_with_nan_zero_and_the_fired_step(qtbot):
    p = _panel(qtbot)
    p.begin("/x/train.py", WatchRequest(("nan", "zero")))
    p.add_points(
        [
            _point(1, {"dense": 4.0, "out": 1.0}, weight={"dense": 0.0, "out": 2.0}),
            _point(2, {"dense": 2.0, "out": 0.0}),
            _point(3, {"dense": NAN, "out": INF}, update={}),  # the step that fired: no update
        ]
    )
    p.add_points([_point(4, {"dense": 1.0, "out": 0.5, "late": 3.0})])  # a layer seen late
    p.redraw()
    assert p.record.layers == ["dense", "out", "late"]
    assert [p.layers.item(i).text() for i in range(p.layers.count())] == ["dense", "out", "late"]
    assert len(p._curves) == 3
    for plot in (p.grad_plot, p.ratio_plot):
        assert plot.getAxis("left").logMode and not plot.getAxis("bottom").logMode
    grad, ratio = p._curves[0]
    x, y = grad.getOriginalDataset()
    assert x.tolist() == [1, 2, 3, 4]
    # a log axis cannot show NaN, inf, 0 or a missing value: gaps in the curve, never a crash
    assert y[[0, 1, 3]].tolist() == [4.0, 2.0, 1.0] and math.isnan(y[2])
    assert np.isnan(p._curves[1][0].getOriginalDataset()[1][[1, 2]]).all()
    assert np.isnan(p._curves[2][0].getOriginalDataset()[1][:3]).all()  # before "late" existed
    _, r = ratio.getOriginalDataset()
    assert math.isnan(r[0]) and r[1] == pytest.approx(0.005) and math.isnan(r[2])  # weight 0; no update
    # NaN and inf gradients are ✕ above the curves, a zero one ○ below them, in the layer's colour
    assert _xs(p._marks[("nan", 0)]) == [3] and _xs(p._marks[("nan", 1)]) == [3]
    assert _xs(p._marks[("zero", 1)]) == [2]
    top = p._marks[("nan", 0)].getOriginalDataset()[1][0]
    bottom = p._marks[("zero", 1)].getOriginalDataset()[1][0]
    assert top > 4.0 and 0 < bottom < 0.5
    assert ("nan", 2) not in p._marks  # a missing gradient is not a NaN one
    assert "Watching for nan or zero" in p.header.text() and "4 steps" in p.header.text()
    p.grab()  # draws without a warning about NaN on a log axis turning into an exception

    watch = WatchSummary(
        until=["nan", "zero"],
        steps=3,
        fired="nan",
        step=3,
        at="train_step, call 3",
        detail="the loss is not finite",
    )
    p.show_report(Report(script="/x/train.py", target="t", mode="program", watch=watch))
    assert not p.running and p.fired_step() == 3
    assert [line.value() for line in p._lines] == [3, 3]  # both plots
    assert p._lines[0].label.toPlainText() == "nan · step 3"
    assert "nan at step 3" in p.header.text() and "the loss is not finite" in p.header.text()
    # unticking a layer hides its curves and its markers
    p.layers.item(1).setCheckState(Qt.CheckState.Unchecked)
    assert not p._curves[1][0].isVisible() and _xs(p._marks[("zero", 1)]) == []
    # a diagnosed step from the record gets a line of its own; the fired one stays
    p.mark_diagnosed(2)
    assert sorted(line.value() for line in p._lines) == [2, 3, 3] and "showing step 2" in p.header.text()
    # a result for another script (a saved analysis) forgets the record
    p.show_report(Report(script="/y/other.py", target="t"))
    assert p.record.n == 0 and p.pages.currentWidget() is p.empty


def test_record_keeps_steps_sorted_and_missing_apart_from_nan():
    rec = TrainingRecord()
    rec.add([_point(5, {"a": 1.0}), _point(6, {"a": NAN})])
    rec.add([_point(3, {"a": 2.0, "b": 0.0})])  # decoded off the GUI thread, after a later batch
    rec.add([{"step": "x"}, "junk", _point(7, {"a": None})])  # malformed points are skipped
    assert rec.steps.tolist() == [3, 5, 6, 7]
    assert rec.grad(0)[[0, 1, 3]].tolist() == [2.0, 1.0, MISSING] and math.isnan(rec.grad(0)[2])
    assert rec.grad(1).tolist() == [0.0, MISSING, MISSING, MISSING]
    assert [rec.index_of(s) for s in (0, 4.2, 5.6, 100)] == [0, 1, 2, 3]
    rec.add([_point(s, {"a": 1.0}) for s in range(8, 3000)])  # past the first buffer
    assert rec.n == 2996 and rec.steps[-1] == 2999 and rec.grad(1).shape == (2996,)


def test_ten_thousand_steps_in_batches_are_drawn_clipped_and_downsampled(qtbot):
    """A fast program: 100 batches of 100 steps, eight layers. Every step is kept, and each
    curve draws only what is in view, downsampled to the pixels (the cost per batch is in
    tests/bench/bench_training_dock.py)."""
    p = _panel(qtbot)
    p.begin("/x/train.py", WatchRequest(("nan",)))
    rng = np.random.default_rng(0)
    layers = [f"layer_{i}" for i in range(8)]
    for b in range(100):
        steps = range(b * 100 + 1, b * 100 + 101)
        p.add_points(
            [
                _point(
                    s,
                    {
                        name: (
                            NAN
                            if s % 997 == 0 and i == 3
                            else 0.0
                            if s > 9000 and i == 0
                            else float(np.exp(-s / 3000 * (i + 1)) * (1 + 0.3 * rng.random()))
                        )
                        for i, name in enumerate(layers)
                    },
                )
                for s in steps
            ]
        )
        p.redraw()
    qtbot.wait(0)
    assert p.record.n == 10_000
    assert p._curves[0][0].getOriginalDataset()[0].size == 10_000
    for curves in p._curves:
        for c in curves:
            assert c.opts["clipToView"] and c.opts["autoDownsample"], c.opts
    assert _xs(p._marks[("nan", 3)]) == [s for s in range(1, 10_001) if s % 997 == 0]


def test_a_click_on_a_step_offers_to_diagnose_it(qtbot):
    p = _panel(qtbot)
    p.begin("/x/train.py", WatchRequest(("zero",)))
    p.add_points([_point(s, {"dense": 1.0 / s}) for s in range(1, 21)])
    p.redraw()
    p.grad_plot.getViewBox().autoRange()
    qtbot.wait(50)
    vb = p.ratio_plot.getViewBox()
    middle = vb.viewRect().center().y()
    assert p.step_at(vb.mapViewToScene(QPointF(7.2, middle))) == 7  # the nearest recorded step
    assert p.step_at(QPointF(-50, -50)) is None
    menu = p.step_menu(7)
    assert [a.text() for a in menu.actions()] == ["Diagnose step 7 (stops this run)"]
    p.stop("cancelled")
    menu = p.step_menu(7)
    assert [a.text() for a in menu.actions()] == ["Diagnose step 7"]
    assert "Run cancelled" in p.header.text() and "20 steps" in p.header.text()
    with qtbot.waitSignal(p.diagnoseRequested, timeout=1000) as sig:
        menu.actions()[0].trigger()
    assert sig.args == [7]


def test_run_until_dialog_remembers_its_choice(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    d = RunUntilDialog(settings)
    qtbot.addWidget(d)
    assert {n for n, b in d.boxes.items() if b.isChecked()} == {"nan", "zero"}
    assert d.request() == WatchRequest(("nan", "zero"), None, 5)
    d.all_box.click()
    assert all(b.isChecked() for b in d.boxes.values())
    d.all_box.click()
    assert not d.run_button.isEnabled()  # nothing to watch for
    d.boxes["exploding"].setChecked(True)
    d.max_spin.setValue(500)
    assert d.request() == WatchRequest(("exploding",), 500, None) and not d.zero_spin.isEnabled()
    d.accept()
    again = RunUntilDialog(settings)
    qtbot.addWidget(again)
    assert again.request() == WatchRequest(("exploding",), 500, None)


def test_worker_request_and_large_steps_messages(qtbot):
    sent: list[bytes] = []
    fake = types.SimpleNamespace(busy=False, proc=types.SimpleNamespace(write=sent.append))
    Worker.analyze(fake, "/x/t.py", None, run=True, args=["--lr", "1"], until=("nan",), live=True)  # type: ignore[arg-type]
    Worker.analyze(
        fake,
        "/x/t.py",
        None,
        run=True,
        until=("zero",),
        live=True,
        zero_steps=3,  # type: ignore[arg-type]
        max_steps=40,
    )
    Worker.analyze(fake, "/x/t.py", None, run=True, step=4)  # type: ignore[arg-type]
    import json

    a, b, c = (json.loads(x) for x in sent)
    assert (a["until"], a["step"], a["live"], a["args"], "zero_steps" in a) == (
        ["nan"],
        UNBOUNDED,
        True,
        ["--lr", "1"],
        False,
    )
    assert (b["until"], b["step"], b["zero_steps"]) == (["zero"], 40, 3)
    assert c["step"] == 4 and "until" not in c and "live" not in c

    # a large steps message is decoded off the GUI thread, and is not the analysis's answer
    w = Worker()
    w.kill()
    got: list[list] = []
    w.steps.connect(got.append)
    points = [
        {"step": s, "grad": {f"layer_{i}": 0.5 for i in range(200)}, "update": {}, "weight": {}}
        for s in range(1, 80)
    ]
    line = json.dumps({"type": "steps", "points": points}).encode()
    assert len(line) > 256 * 1024
    w._consume(line + b"\n" + b'{"type": "steps", "points": [{"step": 80, "grad": {"a": NaN}}]}\n')
    qtbot.waitUntil(lambda: len(got) == 2, timeout=5000)
    assert not w.answered
    assert sorted(len(g) for g in got) == [1, 79] and any(math.isnan(g[0]["grad"].get("a", 0)) for g in got)


def test_training_dock_is_saved_with_the_layout(qtbot, monkeypatch):
    from app.window import LAYOUT_VERSION, MainWindow
    from app.worker_client import WorkerPool

    w = MainWindow(pool=WorkerPool(spare=False))
    qtbot.addWidget(w)
    w.show()
    dock = w.docks["Training"]
    assert dock.toggleViewAction() in w.view_menu.actions()
    assert w.run_until_action.shortcut().toString() == SHORTCUT
    dock.hide()
    state = w.saveState(LAYOUT_VERSION)
    w2 = MainWindow(pool=WorkerPool(spare=False))
    qtbot.addWidget(w2)
    w2.show()
    assert w2.docks["Training"].isVisible()
    assert w2.restoreState(state, LAYOUT_VERSION)
    assert not w2.docks["Training"].isVisible()
    w2.ask_run_until()  # no script: says so, opens nothing
    assert "Open a script first" in w2.stage.text() and w2.until_dialog is None
    # with one: Ctrl+Shift+R opens the dialog, whose Run starts the watched run it describes
    asked: list[WatchRequest] = []
    monkeypatch.setattr(w2, "run_until", asked.append)
    w2.analysis.script = str(EXAMPLES / "train_dead_relu.py")
    w2.run_until_action.trigger()
    dialog = w2.until_dialog
    assert dialog is not None and dialog.isVisible()
    dialog.boxes["none"].setChecked(True)
    dialog.run_button.click()
    assert asked == [dialog.request()] and "none" in asked[0].until


# -- through a real worker ------------------------------------------------------------------
def _wait_answer(qtbot, window) -> None:
    a = window.analysis
    qtbot.waitUntil(lambda: not a.busy() and bool(a.report or a.last_error), timeout=ANALYSIS_TIMEOUT_MS)


def test_watched_run_draws_live_marks_the_fired_step_then_diagnoses_an_earlier_one(qtbot, window):
    path = str(EXAMPLES / "train_dead_relu.py")
    window.open_script(path, run=True, args=[])
    window.analysis.report, window.analysis.last_error = None, None
    window.run_until(WatchRequest(("zero",)))  # stops that analysis: a watched run instead
    assert window.docks["Training"].isVisible() and window.training.running
    live: list[tuple[int, bool]] = []  # (points, whether the result had arrived)
    assert window.analysis.worker is not None
    a = window.analysis
    a.worker.steps.connect(lambda pts: live.append((len(pts), a.report is not None)))
    _wait_answer(qtbot, window)
    assert window.analysis.last_error is None, window.analysis.last_error
    assert live and not live[0][1], live  # the first points came while the program ran
    watch = window.analysis.report.watch
    assert watch is not None and watch.fired == "zero" and watch.step is not None
    panel = window.training
    qtbot.waitUntil(lambda: panel.record.n == watch.steps, timeout=5000)
    assert panel.record.layers == ["hidden", "out"]
    assert panel.fired_step() == watch.step and panel._lines[0].value() == watch.step
    assert f"zero at step {watch.step}" in panel.header.text()
    # the graph and the lists show that step: its zero gradients
    assert window.analysis.step == watch.step
    assert window.bar.combo.itemText(0) == f"Gradient step {watch.step}"
    assert {v.name: v.kind for v in window.analysis.report.variables}["hidden.kernel"] == "zero"
    assert window.stage.text().startswith(f"zero at gradient step {watch.step}: ")
    assert "watching every gradient step until zero" in window.log.toPlainText()

    # a click at an earlier step: "Diagnose step N", a plain run to it; the record stays
    n = 10
    window.analysis.report = None
    panel.step_menu(n).actions()[0].trigger()
    assert window.analysis.watching is None
    _wait_answer(qtbot, window)
    assert window.analysis.last_error is None, window.analysis.last_error
    report = window.analysis.report
    assert report.watch is None and report.mode == "program" and window.analysis.step == n
    assert {v.name: v.status for v in report.variables}["hidden.kernel"] == "connected"
    assert panel.record.n == watch.steps and panel.fired_step() == watch.step
    assert sorted(line.value() for line in panel._lines) == sorted([n, watch.step, watch.step])
    assert f"showing step {n}" in panel.header.text()
    assert f"running train_dead_relu.py to its gradient step {n}" in window.log.toPlainText()


def test_another_script_opens_on_its_problems_not_the_emptied_record(qtbot, window):
    """After a Run until…, the Training tab is in front; opening another script empties the
    record and puts the new script's Problems in front of it."""
    from conftest import run_analysis

    window.docks["Training"].show()
    window.docks["Training"].raise_()  # as a Run until… leaves it
    qtbot.waitUntil(lambda: not window.docks["Training"].visibleRegion().isEmpty(), timeout=5000)
    assert window.docks["Problems"].visibleRegion().isEmpty()
    run_analysis(qtbot, window, EXAMPLES / "kind_stop_gradient.py")
    assert window.problems.topLevelItemCount() >= 1
    qtbot.waitUntil(lambda: not window.docks["Problems"].visibleRegion().isEmpty(), timeout=5000)
    assert window.docks["Training"].visibleRegion().isEmpty() and window.training.record.n == 0


ENDLESS = """
import time
import tensorflow as tf

w = tf.Variable([[0.5], [-0.3]], name="w")
opt = tf.keras.optimizers.SGD(0.01)
x = tf.constant([[1.0, 2.0]])
step = 0
while True:
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum((x @ w - 3.0) ** 2)
    grads = tape.gradient(loss, [w])
    opt.apply_gradients(zip(grads, [w]))
    step += 1
    if step % 50 == 0:
        print("step", step, flush=True)
    time.sleep(0.005)
"""


def test_cancel_stops_a_watched_run_and_keeps_its_record(qtbot, window, tmp_path):
    script = tmp_path / "endless.py"
    script.write_text(ENDLESS)
    window.open_script(str(script), run=True, args=[])
    window.run_until(WatchRequest(("nan",)))
    worker = window.analysis.worker
    assert worker is not None
    qtbot.waitUntil(lambda: window.training.record.n >= 20, timeout=ANALYSIS_TIMEOUT_MS)
    pid = worker.pid
    assert _alive(pid)
    window.cancel()
    qtbot.waitUntil(lambda: not _alive(pid), timeout=3000)
    assert not window.analysis.busy() and window.stage.text() == "Cancelled"
    kept = window.training.record.n
    assert kept >= 20 and not window.training.running
    assert "Run cancelled" in window.training.header.text()
    qtbot.wait(300)  # nothing more arrives from the killed run
    assert window.training.record.n == kept

    # the window goes on: a step from the kept record is diagnosed
    window.analysis.report, window.analysis.last_error = None, None
    window.diagnose_step(3)
    _wait_answer(qtbot, window)
    assert window.analysis.last_error is None, window.analysis.last_error
    assert window.analysis.report.mode == "program" and window.analysis.step == 3
    assert window.training.record.n == kept


def test_the_step_axis_shows_whole_steps_only(qtbot):
    """A run of three steps was labelled 1.5 and 2.5: the step axis ticks whole steps."""
    from app.panels.training import StepAxis

    panel = TrainingPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 400)
    panel.show()
    panel.begin("/x/train.py", WatchRequest(("nan",)))
    panel.add_points(
        [{"step": s, "grad": {"d": 0.1 * s}, "update": {"d": 0.01}, "weight": {"d": 1.0}} for s in (1, 2, 3)]
    )
    panel.redraw()
    qtbot.wait(50)
    axis = panel.ratio_plot.getAxis("bottom")
    assert isinstance(axis, StepAxis)
    lo, hi = panel.ratio_plot.getViewBox().viewRange()[0]
    ticks = [v for _, values in axis.tickValues(lo, hi, axis.width()) for v in values]
    assert ticks and all(float(v).is_integer() for v in ticks) and {1, 2, 3} <= set(ticks)
    assert axis.tickStrings([1.0, 2.0, 3.0], 1, 1) == ["1", "2", "3"]
    # a long run keeps pyqtgraph's round spacing
    many = [v for _, values in axis.tickValues(0, 10_000, 600) for v in values]
    assert many and all(float(v).is_integer() for v in many) and len(many) < 60
