"""The Overview dock's minimap: problem ops in their colours, the viewport outlined and
following the view, a click or drag moving the view, the image cached between scrolls."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.graph.minimap import FILLS, VIEW_PEN, Minimap
from app.graph.palette import STYLES
from app.graph.view import GraphView
from tests.gui.test_render import _count
from tfviz.report import GraphDoc, GraphEdge, GraphOp, Report


def _chain_report(n: int = 40, bad: int = 20) -> Report:
    """A long chain of ops in four scopes, with one op (``op20``) whose gradient raises."""
    ops = [GraphOp("var:w", "w", "Variable", "", on_path=True, is_variable=True)]
    edges = []
    prev = "var:w"
    for i in range(n):
        status = "unimplemented" if i == bad else "passes"
        ops.append(GraphOp(f"op{i}", f"blk{i // 10}/op{i}", "MatMul" if i != bad else "Svd",
                           f"blk{i // 10}", on_path=True, status=status))
        edges.append(GraphEdge(prev, f"op{i}", 0, 0, "float32", [4, 4], status=status))
        prev = f"op{i}"
    ops.append(GraphOp("__target__", "loss", "Target", "", on_path=True))
    edges.append(GraphEdge(prev, "__target__", 0, 0, "float32", [], status="passes"))
    return Report(script="x.py", target="loss", graph=GraphDoc(ops=ops, edges=edges))


def _setup(qapp, expand: bool = True):
    view = GraphView()
    view.resize(420, 320)
    view.show()
    mini = Minimap(view)
    mini.resize(200, 300)
    mini.show()
    view.set_report(_chain_report())
    if expand:
        view.set_all_expanded(True)
    view.resetTransform()  # zoomed in: the graph is much taller than the view
    view.scale(0.8, 0.8)
    view.update_lod()
    QApplication.processEvents()
    return view, mini


def _point(mini: Minimap, view: GraphView, node: str) -> QPoint:
    return mini.map_from_scene(view.node_items[node].sceneBoundingRect().center()).toPoint()


def test_problem_op_is_drawn_in_its_status_colour_and_enlarged(qapp):
    view, mini = _setup(qapp)
    view.centerOn(view.node_items["op5"])  # op20 is out of view: its mark is not shaded
    img = mini.grab().toImage()
    raises = QColor(STYLES["raises"].color)
    bad = _point(mini, view, "op20")
    # the op is a pixel or two tall at this scale; its mark is at least MIN_MARK (7) wide
    assert _count(img, bad.x(), bad.y(), raises, r=3) >= 20
    ok = _point(mini, view, "op5")
    assert _count(img, ok.x(), ok.y(), raises, r=2) == 0
    assert _count(img, ok.x(), ok.y(), QColor(FILLS["op"]), r=3) >= 1  # an ordinary op is grey


def test_problem_colour_survives_collapsing(qapp):
    """Collapsed, the group holding the broken op is marked in its colour (its worst badge)."""
    view, mini = _setup(qapp, expand=False)
    blk = next(g for g in view.h.groups if view.h.groups[g].label == "blk2")
    assert blk in view.node_items  # a collapsed box
    img = mini.grab().toImage()
    p = _point(mini, view, blk)
    assert _count(img, p.x(), p.y(), QColor(STYLES["raises"].color), r=3) >= 20


def test_click_and_drag_centre_the_main_view(qapp):
    view, mini = _setup(qapp)

    def centre() -> QPointF:
        return view.mapToScene(view.viewport().rect().center())

    tol = 3 / mini._scale  # a minimap pixel is 1/scale scene units
    target = view.node_items["op25"].sceneBoundingRect().center()
    QTest.mouseClick(mini, Qt.LeftButton, Qt.NoModifier, _point(mini, view, "op25"))
    assert abs(centre().y() - target.y()) < tol
    assert abs(centre().x() - target.x()) < tol
    start, end = _point(mini, view, "op10"), _point(mini, view, "op30")
    QTest.mousePress(mini, Qt.LeftButton, Qt.NoModifier, start)
    assert abs(centre().y() - view.node_items["op10"].sceneBoundingRect().center().y()) < tol
    QTest.mouseMove(mini, end)
    QTest.mouseRelease(mini, Qt.LeftButton, Qt.NoModifier, end)
    assert abs(centre().y() - view.node_items["op30"].sceneBoundingRect().center().y()) < tol


def test_arrow_keys_pan_the_main_view(qapp):
    view, mini = _setup(qapp)
    view.centerOn(view.node_items["op20"])
    before = view.mapToScene(view.viewport().rect().center())
    QTest.keyClick(mini, Qt.Key_Down)
    after = view.mapToScene(view.viewport().rect().center())
    assert after.y() > before.y() + 10


def test_viewport_rectangle_follows_a_scroll_without_redrawing_the_graph(qapp, qtbot):
    view, mini = _setup(qapp)
    bar = view.verticalScrollBar()
    bar.setValue(bar.minimum())
    qtbot.wait(150)  # pending repaints (the scene's change after the build) are done
    renders, paints = mini.renders, mini.paints
    r0 = mini.viewport_rect()
    bar.setValue(bar.minimum() + 300)
    qtbot.waitUntil(lambda: mini.paints > paints, timeout=2000)  # the scroll repainted it
    r1 = mini.viewport_rect()
    moved = 300 / view.transform().m11() * mini._scale
    assert abs((r1.top() - r0.top()) - moved) < 1.5
    assert abs(r1.height() - r0.height()) < 0.5
    img = mini.grab().toImage()
    x, y = int(r1.center().x()), int(round(r1.top()))
    assert _count(img, x, y, VIEW_PEN, r=1) >= 2, "no outline along the rectangle's top edge"
    assert mini.renders == renders, "a scroll redrew the cached graph image"


def test_a_rebuild_redraws_the_image(qapp, qtbot):
    view, mini = _setup(qapp)
    mini.grab()
    renders = mini.renders
    blk = next(g for g in view.h.groups if view.h.groups[g].label == "blk2")
    view.toggle_group(blk)  # collapse: new node items, new layout
    qtbot.waitUntil(lambda: mini.renders > renders, timeout=2000)
    assert blk in view.node_items
    img = mini.grab().toImage()
    p = _point(mini, view, blk)
    assert _count(img, p.x(), p.y(), QColor(STYLES["raises"].color), r=3) >= 20


def test_empty_state_says_what_it_will_show(qapp):
    view = GraphView()
    mini = Minimap(view)
    mini.resize(240, 160)
    assert mini.is_empty()
    img = mini.grab().toImage()
    grey = sum(1 for x in range(img.width()) for y in range(0, 40)
               if img.pixelColor(x, y).red() < 200)
    assert grey > 30, "the empty minimap says nothing"
    view.set_report(_chain_report())
    assert not mini.is_empty()
    view.set_report(None)
    assert mini.is_empty()


def test_window_has_the_overview_dock_in_the_view_menu(qapp):
    from app.window import MainWindow
    from app.worker_client import WorkerPool

    w = MainWindow(WorkerPool(spare=False))
    try:
        dock = w.docks["Overview"]
        assert isinstance(dock.widget(), Minimap) and dock.widget().view is w.graph.view
        assert dock.toggleViewAction() in w.view_menu.actions()
        assert dock.objectName() == "dock_Overview"  # saved with the window's dock state
    finally:
        w.close()
        w.deleteLater()
