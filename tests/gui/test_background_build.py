"""A layout change drawn in the background (app.graph.building) is the one drawn at once.

Expand all, a double-click on a group, Path only and the magnitude overlay place the
graph on a thread and draw it a step at a time between events. The straightforward way,
``rebuild()`` on the GUI thread, is its twin: every box, frame and edge lands at the same
place, with the same status and pen, on a model-shaped graph and on the bundled examples.
"""

from __future__ import annotations

import json

import pytest
from conftest import drawn
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from app.graph.view import GraphView
from tests.bigdoc import deep_document
from tfviz.analysisfile import parse_analysis


@pytest.fixture(scope="module")
def layered_report():
    """A model-shaped graph of 40 layers of 30 ops: large enough to take several steps."""
    return parse_analysis(json.dumps(deep_document(40, 30)))


def _state(view: GraphView) -> dict:
    return {
        "nodes": {
            k: (it.pos().x(), it.pos().y(), it.boundingRect().getRect()) for k, it in view.node_items.items()
        },
        "frames": {k: it.sceneBoundingRect().getRect() for k, it in view.frames.items()},
        "edges": {k: p.boundingRect().getRect() for k, p in view.edge_routes.items()},
        "cats": dict(view.edge_cats),
        "status": dict(view.edge_status),
        "pens": {k: (b.pen().color().name(), b.pen().widthF()) for k, b in view.edge_items.items()},
        "rect": view.scene().sceneRect().getRect(),
    }


def _both(report, change) -> tuple[dict, dict]:
    """``change(view, background)`` applied to two views of ``report``: at once, and in
    the background run to its end."""
    states = []
    for background in (False, True):
        view = GraphView()
        view.resize(900, 700)
        view.set_report(report)
        change(view, background)
        drawn(view)
        states.append(_state(view))
    return states[0], states[1]


CHANGES = {
    "expand all": lambda v, bg: v.set_all_expanded(True, background=bg),
    "collapse all": lambda v, bg: (v.set_all_expanded(True), v.set_all_expanded(False, background=bg)),
    "path only": lambda v, bg: v.set_only_path(True, background=bg),
    "magnitude": lambda v, bg: (v.set_all_expanded(True), v.set_magnitude(True, background=bg)),
    "a group opened": lambda v, bg: v.toggle_group(
        next(g for g in v.node_items if g in v.hierarchy.groups), background=bg
    ),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_background_rebuild_draws_what_the_rebuild_at_once_draws(qapp, layered_report, change):
    now, later = _both(layered_report, CHANGES[change])
    assert now["nodes"] and now == later


@pytest.mark.parametrize(
    "name", ["seed2_frozen_copy.py", "kind_stop_gradient.py", "seed1_svd_dynamic_shape.py"]
)
def test_the_same_on_the_examples(qapp, analyze_example, name):
    report = analyze_example(name)
    for change in ("expand all", "magnitude"):
        now, later = _both(report, CHANGES[change])
        assert now["nodes"] and now == later, f"{name}: {change}"


def test_the_event_loop_runs_while_the_graph_is_drawn(qapp, layered_report):
    """Expand all returns at once; events are handled between its steps; the graph is
    complete at the end, and fitted in view."""
    view = GraphView()
    view.resize(900, 700)
    view.set_report(layered_report)
    before = len(view.node_items)
    ticks = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(view.building()))
    timer.start(0)
    view.set_all_expanded(True, background=True)
    assert view.building() and len(view.node_items) == before  # nothing done yet on this thread
    drawn(view)
    timer.stop()
    assert ticks.count(True) >= 3, ticks.count(True)  # the loop turned while it was drawn
    assert len(view.node_items) == sum(1 for _ in layered_report.graph.ops) - _aliased(view)
    assert view.transform().m11() < 1.0  # fitted: the whole graph in view


def _aliased(view: GraphView) -> int:
    return len(view.hierarchy.alias)


def test_a_later_change_drops_the_build_in_flight(qapp, layered_report):
    view = GraphView()
    view.set_report(layered_report)
    view.set_all_expanded(True, background=True)
    for _ in range(3):
        QApplication.processEvents()
    view.set_all_expanded(False, background=True)  # while the first is placed or drawn
    drawn(view)
    assert view.expanded == view.scene().expansion("none")
    assert set(view.node_items) == set(_both(layered_report, CHANGES["collapse all"])[0]["nodes"])
    view.set_all_expanded(True, background=True)
    op = next(o.id for o in layered_report.graph.ops if not o.is_variable)
    item = view.reveal(op)  # a build at once, for a node selected now: the one in flight goes
    assert item is not None and not view.building()
    revealed = _state(view)
    for _ in range(50):  # and nothing of it lands later
        QApplication.processEvents()
    assert _state(view) == revealed and op in view.node_items


def test_the_toolbar_draws_in_the_background(qapp, layered_report):
    from PySide6.QtWidgets import QToolButton

    from app.graph.panel import GraphPanel

    panel = GraphPanel()
    panel.view.set_report(layered_report)
    button = next(b for b in panel.findChildren(QToolButton) if b.text() == "Expand all")
    button.click()
    assert panel.view.building()
    drawn(panel.view)
    assert panel.view.expanded == panel.view.scene().expansion("all")


GARBAGE = r"""
import gc, json, os, sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from app.graph.view import GraphView
from tests.bigdoc import deep_document
from tfviz.analysisfile import parse_analysis

report = parse_analysis(json.dumps(deep_document(40, 30)))
for _ in range(25):
    for _ in range(2):  # views drawn in the background, then dropped: garbage in cycles
        v = GraphView()
        v.set_report(report)
        v.set_all_expanded(True, background=True)
        while v.building():
            app.processEvents()
        del v
    view = GraphView()
    view.set_report(report)
    view.set_all_expanded(True, background=True)  # placed on its thread...
    view.reveal(next(o.id for o in report.graph.ops if not o.is_variable))  # ...dropped
    for _ in range(50):
        app.processEvents()
for _ in range(200):
    if gc.isenabled():
        break
    app.processEvents()
    import time; time.sleep(0.005)
print(gc.isenabled())
"""


def test_garbage_views_are_never_freed_on_the_placement_thread():
    """Python frees cyclic garbage in whichever thread allocates: dropped views (their scene
    and items) freed on a placement thread crashed Qt, one run in eight. The collector stays
    off while a placement runs, and comes back on once none does."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    done = subprocess.run(
        [sys.executable, "-c", GARBAGE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, QT_QPA_PLATFORM="offscreen"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == "True"  # the collector is back on


def test_a_problem_or_a_match_is_selected_once_its_groups_are_drawn(qapp, layered_report):
    """A click on a problem or a search match opens the groups hiding its op in the
    background, then selects and centres it: as the selection made at once does."""
    op = [o.id for o in layered_report.graph.ops if not o.is_variable][-40]
    views = []
    for background in (False, True):
        view = GraphView()
        view.resize(900, 700)
        view.set_report(layered_report)
        assert op not in view.node_items  # hidden in a collapsed layer
        assert view.select_op(op, background=background)
        assert view.building() == background
        drawn(view)
        views.append(view)
    now, later = views
    assert (
        [i.node_id for i in later.scene().selectedItems()]
        == [op]
        == [i.node_id for i in now.scene().selectedItems()]
    )
    assert later.expanded == now.expanded and _state(later) == _state(now)
    assert later.mapToScene(later.viewport().rect().center()) == now.mapToScene(
        now.viewport().rect().center()
    )
