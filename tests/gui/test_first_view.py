"""The first view survives the window's own layout: a report shown while the viewport is
still small is framed again when it grows, until the user moves the view."""

from __future__ import annotations

from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QApplication

from app.graph.framing import readable_scale
from app.graph.view import GraphView
from tfviz.report import GraphDoc, GraphEdge, GraphOp, Problem, Report


def _report(before: int = 12, after: int = 30) -> Report:
    """A chain: the variable, ``before`` ops, the raising Svd, ``after`` ops, the loss."""
    names = [
        "var:w",
        *[f"a{i}" for i in range(before)],
        "svd",
        *[f"b{i}" for i in range(after)],
        "__target__",
    ]
    ops = [
        GraphOp(
            n,
            n,
            {"var:w": "Variable", "svd": "Svd", "__target__": "Target"}.get(n, "Tanh"),
            "",
            on_path=True,
            is_variable=n == "var:w",
            status="unimplemented" if n == "svd" else "ok",
            message="no gradient" if n == "svd" else "",
        )
        for n in names
    ]
    edges = [
        GraphEdge(a, b, 0, 0, "float32", [3], status="unimplemented" if b == "svd" else "passes")
        for a, b in zip(names, names[1:])
    ]
    problem = Problem("unimplemented", "error", "svd", "Svd", "no gradient", variables=["w"])
    return Report(script="x.py", target="loss", graph=GraphDoc(ops=ops, edges=edges), problems=[problem])


def _visible(view, node: str) -> bool:
    r = view.mapFromScene(view.node_items[node].sceneBoundingRect()).boundingRect()
    return QRectF(view.viewport().rect()).contains(QRectF(r))


def _opened_small(qapp) -> GraphView:
    view = GraphView()
    view.resize(260, 110)  # as a window is before its docks are laid out
    view.show()
    QApplication.processEvents()
    view.set_report(_report())
    QApplication.processEvents()
    assert not (_visible(view, "var:w") and _visible(view, "svd"))
    return view


def _shown(view) -> QRectF:
    return view.mapToScene(view.viewport().rect()).boundingRect()


def test_a_resize_before_the_user_moves_the_view_frames_the_problem_again(qapp):
    view = _opened_small(qapp)
    view.resize(900, 900)
    QApplication.processEvents()
    assert _visible(view, "var:w") and _visible(view, "svd")
    assert view.transform().m11() >= readable_scale() - 1e-9
    direct = GraphView()  # the same report opened at the final size straight away
    direct.resize(900, 900)
    direct.show()
    QApplication.processEvents()
    direct.set_report(_report())
    QApplication.processEvents()
    a, b = _shown(view), _shown(direct)
    assert abs(a.center().x() - b.center().x()) < 2 and abs(a.center().y() - b.center().y()) < 2, (a, b)


def test_once_the_user_zoomed_a_resize_keeps_their_view(qapp):
    view = _opened_small(qapp)
    view.zoom_by(2.0)
    chosen = view.transform().m11()
    view.resize(900, 900)
    QApplication.processEvents()
    assert view.transform().m11() == chosen
    assert not view.framing.untouched


def test_a_scroll_bar_that_comes_or_goes_does_not_frame_again(qapp):
    """A fit that makes a scroll bar appear shrinks the viewport, not the view: framing
    again for it made the next fit drop the bar, and the two chased each other for good."""
    from PySide6.QtCore import Qt

    view = _opened_small(qapp)
    view.resize(900, 900)
    QApplication.processEvents()
    framed = []
    original = view.framing.first_view
    view.framing.first_view = lambda: (framed.append(1), original())[1]
    before = view.viewport().size()
    view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
    view.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
    QApplication.processEvents()
    assert view.viewport().size() != before  # the viewport did shrink
    assert framed == [] and view.framing.untouched
    view.resize(700, 800)  # the view itself: framed again
    QApplication.processEvents()
    assert framed
