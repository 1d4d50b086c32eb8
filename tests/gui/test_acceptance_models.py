"""Seven models a new user tried, each in the real window and worker.

A new user who opens the app sees the model as layers, with the cut and the affected
variables in view and in the right colours, without a click; selecting any variable shows
its whole path or its cut; no healthy model shows a bug-styled edge. One analysis per model,
every check probes what the window draws.
"""

from __future__ import annotations

import re

import pytest
from conftest import EXAMPLES, drawn, run_analysis
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QFontInfo
from PySide6.QtWidgets import QApplication

from app.graph.framing import READABLE_PX
from app.graph.items import _FONT, _SUBTITLE
from app.graph.palette import (
    CARRIES,
    NO_GRADIENT_COLOR,
    QUIET,
    STYLES,
    UNMEASURED_COLOR,
    carried_norm,
    category,
    look,
    magnitude_pen,
    worst,
)
from tests.gui.test_render import _count, render_view

#: model -> (example, healthy)
MODELS = {
    "transformer": ("transformer_stop_gradient.py", False),
    "rnn": ("rnn_while_int_cast.py", False),
    "seed1": ("seed1_svd_dynamic_shape.py", False),
    "seed2": ("seed2_frozen_copy.py", False),
    "unet": ("unet_healthy.py", True),
    "dcgan": ("dcgan_healthy.py", True),
    "resnet50": ("healthy_resnet50.py", True),
}
#: name scopes TensorFlow and Keras open around ops: they stand for no user object
OP_SCOPES = {
    "Cast",
    "ReadVariableOp",
    "strided_slice",
    "BiasAdd",
    "MatMul",
    "Reshape",
    "moments",
    "batchnorm",
    "convolution",
    "Shape",
    "GatherV2",
    "Less",
    "add",
}
#: ... and those Keras opens inside a layer (a user's own tf.einsum or tf.tensordot is theirs)
LAYER_OP_SCOPES = {"Tensordot", "einsum"}


def _text_px(view) -> float:
    return view.transform().m11() * QFontInfo(_FONT).pixelSize()


def _in_viewport(view, item) -> bool:
    r = view.mapFromScene(item.sceneBoundingRect()).boundingRect()
    return QRectF(view.viewport().rect()).intersects(QRectF(r))


def _members(view) -> dict[tuple[str, str], list]:
    """Each drawn edge's graph edges (what it merges), by the drawn edge's ends."""
    h, out = view.hierarchy, {}
    for e in view.report.graph.edges:
        if e.back or e.src not in h.ops or e.dst not in h.ops:
            continue
        ab = (h.representative(e.src, view.expanded), h.representative(e.dst, view.expanded))
        if ab in view.edge_cats:
            out.setdefault(ab, []).append(e)
    return out


@pytest.fixture(scope="module", params=sorted(MODELS))
def opened(request, qtbot_module, window):
    """The window as it opens on one model: no click yet."""
    script, healthy = MODELS[request.param]
    run_analysis(qtbot_module, window, EXAMPLES / script)
    assert window.analysis.report is not None, window.analysis.last_error
    assert window.analysis.report.ok == healthy, [p.message for p in window.analysis.report.problems]
    qtbot_module.wait(50)
    return request.param, window


@pytest.fixture(scope="module")
def qtbot_module(qapp, request):
    from pytestqt.qtbot import QtBot

    return QtBot(request)


def test_opens_as_layers_named_after_user_objects(opened):
    name, window = opened
    view = window.graph.view
    # a box's second line (its layer's class and output shape) is legible where its title is
    sub_px = view.transform().m11() * QFontInfo(_SUBTITLE).pixelSize()
    assert sub_px >= 0.8 * _text_px(view) and sub_px >= 7.5, f"{name}: subtitles at {sub_px:.2f} px"
    h = view.hierarchy
    shown = [g for g in (*view.frames, *view.node_items) if g in h.groups]
    boxes = [g for g in shown if h.groups[g].kind != "root"]
    assert boxes, f"{name}: no layer, model or function box in the default view"
    report = window.analysis.report
    layers = {
        p
        for v in [*report.variables, *report.read_not_trained]
        for p in getattr(v, "tf_name", "").split("/")[:-1]
    }  # every Keras layer the step reads
    for gid in boxes:
        g = h.groups[gid]
        stem = re.sub(r"_\d+$", "", g.label)
        in_layer = any(h.groups[a].kind == "layer" for a in h.group_chain(gid)[:-1])
        assert stem not in OP_SCOPES | (LAYER_OP_SCOPES if in_layer else set()), (
            f"{name}: a box titled after an op-name prefix: {g.label}"
        )
        assert not (stem != g.label and stem in layers), f"{name}: trace suffix kept: {g.label}"
        assert "_rewritten" not in g.label and not g.label.startswith("while_body"), g.label
    for g in h.groups.values():  # opened, too: TensorFlow's op scopes are never called layers
        assert not (g.kind == "layer" and g.label in OP_SCOPES | LAYER_OP_SCOPES), f"{name}: {g.label}"
        in_layer = any(h.groups[a].kind == "layer" for a in h.group_chain(g.id)[:-1])
        assert not (g.label == "Tensordot" and in_layer), f"{name}: Keras' Tensordot box in a layer"
    # layers stay boxes, except those holding the first problem
    focus = {gid for op in view.first_problem() for gid in h.chain.get(h.alias.get(op, op), [])}
    opened_layers = {g for g in view.frames if h.groups[g].kind == "layer"} - focus
    assert not {
        g
        for g in opened_layers
        if not any(h.groups[c].kind == "layer" for c in h.groups[g].children if c in h.groups)
    }, f"{name}: plain layers opened by default: {opened_layers}"


def test_opens_on_the_cut_readable_and_in_the_right_colours(opened):
    name, window = opened
    view, report = window.graph.view, window.analysis.report
    if MODELS[name][1]:
        pytest.skip("healthy: no cut to open on (see test_healthy_model_shows_no_bug_styled_edge)")
    problem = next(p for p in report.problems if p.severity != "warning" and p.op)
    cut = view.node_items.get(view.hierarchy.representative(problem.op, view.expanded))
    assert cut is not None and _in_viewport(view, cut), f"{name}: the cut {problem.op} is not in view"
    h = view.hierarchy
    assert h.representative(problem.op, view.expanded) == h.alias.get(problem.op, problem.op), (
        f"{name}: the cut op is hidden inside a collapsed box"
    )
    var = view.node_items.get(view.hierarchy.representative(f"var:{problem.variables[0]}", view.expanded))
    assert var is not None and _in_viewport(view, var), f"{name}: {problem.variables[0]} is not in view"
    assert _text_px(view) >= READABLE_PX - 1e-6, f"{name}: text {_text_px(view):.1f} px"
    # no green where no gradient arrives: a drawn edge merging only starved edges is "starved"
    members = _members(view)
    starved = [ab for ab, es in members.items() if all(look(e) == "starved" for e in es)]
    for ab in starved:
        assert view.edge_cats[ab] == "starved", f"{name}: {ab} drawn {view.edge_cats[ab]}"
    for ab, es in members.items():  # and a merged edge takes its on-path members' status
        assert category(view.edge_status[ab]) == category(worst(look(e) for e in es)), ab
    if problem.kind in ("stop_gradient", "integer"):
        assert starved, f"{name}: nothing drawn as 'no gradient' upstream of the cut"
        img, green = render_view(view), QColor(STYLES["passes"].color)
        vp = QRectF(view.viewport().rect()).adjusted(8, 8, -8, -8)
        probed = 0
        for ab in starved:
            for frac in (0.3, 0.5, 0.7):
                pt = view.mapFromScene(view.edge_routes[ab].pointAtPercent(frac))
                if vp.contains(pt.toPointF()):
                    assert _count(img, pt.x(), pt.y(), green, r=2) == 0, f"{name}: green on {ab}"
                    probed += 1
        assert probed, f"{name}: no starved edge inside the viewport to probe"


def test_healthy_model_shows_no_bug_styled_edge(opened):
    name, window = opened
    view = window.graph.view
    if not MODELS[name][1]:
        pytest.skip("has a bug")
    assert all(v.status == "connected" and v.kind is None for v in window.analysis.report.variables)
    assert set(view.edge_cats.values()) <= QUIET, f"{name}: {set(view.edge_cats.values()) - QUIET}"
    assert _text_px(view) >= READABLE_PX - 1e-6
    if name != "resnet50":  # every op drawn: BatchNorm's stop_gradients are muted, not bugs
        view.set_all_expanded(True)
        cats = set(view.edge_cats.values())
        assert cats <= QUIET, f"{name} expanded: {cats - QUIET}"
        if name == "unet":
            assert "muted" in cats
        view.set_report(window.analysis.report)  # back to the view as opened


def test_selecting_any_variable_shows_its_path_or_its_cut(opened, qtbot_module):
    name, window = opened
    view, report = window.graph.view, window.analysis.report
    variables = report.variables if len(report.variables) <= 30 else report.variables[::20]
    for v in variables:
        assert window.variables.select_name(v.name), v.name
        qtbot_module.wait(10)
        path = view.path
        assert path is not None and path.start == f"var:{v.name}", v.name
        assert len(path.ops) >= 2 and path.hops, f"{name}: empty path for {v.name}"
        if v.status == "connected":
            assert path.end == "__target__" and not path.cut, v.name
        else:
            assert path.cut and path.end in v.blocked_at, (v.name, path.end, v.blocked_at)
        assert view.highlighted_edges > 0 or path.cut, f"{name}: nothing highlighted for {v.name}"
        # in view: the cut where there is one, else the variable (a long path scrolls)
        seen = path.end if path.cut else path.start
        item = view.node_items.get(view.hierarchy.representative(seen, view.expanded))
        assert item is not None and _in_viewport(view, item), f"{name}: {seen} not in view"
        assert item.opacity() == 1.0 and _text_px(view) >= READABLE_PX - 1e-6
    view.show_path(None)


def test_the_magnitude_overlay_and_show_path_agree_with_the_status(opened):
    """On the models with a cut, by pixel probe. With the magnitude overlay on, an edge along
    which no gradient arrives is drawn light grey (no magnitude), and every edge that carries
    one is drawn in its norm's colour, or dotted slate where its norm is not measured (inside a
    loop body). Show path on a box that no gradient reaches ends at the cut and
    says so: it never lists a way to the target."""
    name, window = opened
    if name not in ("transformer", "rnn"):
        pytest.skip("the overlay is checked where a cut leaves edges without gradient")
    view, report = window.graph.view, window.analysis.report
    view.set_report(report)  # the view as it opens, on the cut (an earlier test scrolled it)
    QApplication.processEvents()
    window.graph.magnitude.setChecked(True)
    drawn(view)
    try:
        lo, hi = view.magnitude_range()
        img = render_view(view)
        vp = QRectF(view.viewport().rect()).adjusted(8, 8, -8, -8)
        probed = {"none": 0, "carried": 0}
        for ab, es in _members(view).items():
            norms = [n for e in es if (n := carried_norm(e)) is not None]
            arrives = any(e.status in CARRIES for e in es)
            want = magnitude_pen(max(norms) if norms else None, lo, hi, arrives).color()
            assert view.edge_items[ab].pen().color() == want, f"{name}: {ab}"
            if not arrives:  # no gradient: nothing drawn as a magnitude
                assert want == QColor(NO_GRADIENT_COLOR) and not norms, ab
            elif not norms:  # passes, but inside a loop body: said to be unmeasured, not absent
                assert want == QColor(UNMEASURED_COLOR), ab
            if view.edge_cats[ab] not in QUIET:
                continue  # a cut's marker is drawn on top of it
            for frac in (0.4, 0.5, 0.6):
                pt = view.mapFromScene(view.edge_routes[ab].pointAtPercent(frac))
                if vp.contains(pt.toPointF()):
                    assert _count(img, pt.x(), pt.y(), want, r=3) > 0, f"{name}: {ab} at {frac}"
                    probed["carried" if arrives else "none"] += 1
        assert probed["none"] and probed["carried"], f"{name}: {probed}"
    finally:
        window.graph.magnitude.setChecked(False)
        drawn(view)
    h = view.hierarchy
    starved = [
        g
        for g in h.groups.values()
        if g.kind == "layer"
        and (ops := [h.ops[o] for o in h.members(g.id) if h.ops[o].on_path])
        and all(o.status == "starved" for o in ops)
    ]
    if name == "transformer":
        assert starved, "the attention layer, which no gradient reaches, is not a starved box"
    for g in starved:
        window.links.show_path(g.id)
        path = view.path
        assert path is not None and path.cut, f"{name}: Show path on {g.label} does not end at the cut"
        assert report.graph.ops[[o.id for o in report.graph.ops].index(path.end)].status != "starved"
        text = window.details.toPlainText()
        assert "where its gradient stops" in text and "Every way from here to the target" not in text, text
    view.show_path(None)


def test_rnn_integer_cast_input_is_integer_not_raises(opened):
    name, window = opened
    if name != "rnn":
        pytest.skip("the while-loop RNN only")
    view, report = window.graph.view, window.analysis.report
    (cast,) = [p.op for p in report.problems if p.kind == "integer"]
    assert report.graph.ops[[o.id for o in report.graph.ops].index(cast)].type == "Cast"
    ins = [ab for ab in view.edge_cats if ab[1] == cast]
    assert ins, "the Cast's input edge is not drawn"
    for ab in ins:
        assert view.edge_cats[ab] == "integer", (ab, view.edge_cats[ab])
    assert "raises" not in set(view.edge_cats.values())
