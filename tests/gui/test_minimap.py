"""The Overview dock's minimap: problem ops in their colours, the viewport outlined and
following the view, a click or drag moving the view, the image cached between scrolls."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.graph.minimap import VIEW_PEN, Minimap
from app.graph.overview_image import FILLS
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
        ops.append(
            GraphOp(
                f"op{i}",
                f"blk{i // 10}/op{i}",
                "MatMul" if i != bad else "Svd",
                f"blk{i // 10}",
                on_path=True,
                status=status,
            )
        )
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
    view.centerOn(view.node_items["op16"])  # op20 is out of view (its mark is not shaded), in the band
    img = mini.grab().toImage()
    raises = QColor(STYLES["raises"].color)
    bad = _point(mini, view, "op20")
    assert mini.rect().contains(bad)
    # the op is a pixel or two tall at this scale; its mark is at least MIN_MARK (7) wide
    assert _count(img, bad.x(), bad.y(), raises, r=3) >= 20
    ok = _point(mini, view, "op16")
    assert _count(img, ok.x(), ok.y(), raises, r=2) == 0
    assert _count(img, ok.x(), ok.y(), QColor(FILLS["op"]), r=3) >= 1  # an ordinary op is grey


def test_problem_colour_survives_collapsing(qapp):
    """Collapsed, the group holding the broken op is marked in its colour (its worst badge)."""
    view, mini = _setup(qapp, expand=False)
    blk = next(g for g in view.hierarchy.groups if view.hierarchy.groups[g].label == "blk2")
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
    # dragging the rectangle: a press on it does not jump; it then follows the mouse, the band
    # scrolling under it, so the view moves further than the minimap's scale alone would say
    before, start = centre(), mini.viewport_rect().center().toPoint()
    QTest.mousePress(mini, Qt.LeftButton, Qt.NoModifier, start)
    assert abs(centre().y() - before.y()) < 1
    end = start + QPoint(0, 40)
    QTest.mouseMove(mini, end)
    assert abs(mini.viewport_rect().center().y() - end.y()) < 2
    assert centre().y() - before.y() > 40 / mini._scale * 1.2
    QTest.mouseMove(mini, end + QPoint(0, 2000))  # past the bottom: the end of the graph
    QTest.mouseRelease(mini, Qt.LeftButton, Qt.NoModifier, end + QPoint(0, 2000))
    assert view.verticalScrollBar().value() == view.verticalScrollBar().maximum()


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
    top0 = mini.map_to_scene(r0.topLeft()).y()  # through the band as it is drawn now
    bar.setValue(bar.minimum() + 300)
    qtbot.waitUntil(lambda: mini.paints > paints, timeout=2000)  # the scroll repainted it
    r1 = mini.viewport_rect()
    moved = 300 / view.transform().m11()  # in scene units; the band scrolls too, so less on screen
    assert abs(mini.map_to_scene(r1.topLeft()).y() - top0 - moved) < 1.5
    assert 0 < r1.top() - r0.top() < moved * mini._scale
    assert abs(r1.height() - r0.height()) < 0.5
    img = mini.grab().toImage()
    x, y = int(r1.center().x()), int(round(r1.top()))
    assert _count(img, x, y, VIEW_PEN, r=1) >= 2, "no outline along the rectangle's top edge"
    assert mini.renders == renders, "a scroll redrew the cached graph image"


def test_a_rebuild_redraws_the_image(qapp, qtbot):
    view, mini = _setup(qapp)
    mini.grab()
    renders = mini.renders
    blk = next(g for g in view.hierarchy.groups if view.hierarchy.groups[g].label == "blk2")
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
    grey = sum(1 for x in range(img.width()) for y in range(0, 40) if img.pixelColor(x, y).red() < 200)
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


# -- long and wide graphs: filled across, a band scrolled with the view ---------------------


def _long(qapp, n: int = 300, bad: int = 250, report: Report | None = None, size=(370, 110)):
    """A long graph in a minimap of the Overview dock's shape, the view at a readable zoom."""
    view = GraphView()
    view.resize(800, 500)
    view.show()
    mini = Minimap(view)
    mini.resize(*size)
    mini.show()
    view.set_report(report or _chain_report(n, bad))
    view.set_all_expanded(True)
    view.resetTransform()
    view.scale(0.75, 0.75)
    view.update_lod()
    QApplication.processEvents()
    mini.grab()  # draws the image
    return view, mini


def _fan_report(n: int = 60) -> Report:
    """``n`` variables, each squared into the loss: a graph far wider than tall."""
    ops, edges = [GraphOp("__target__", "loss", "Target", "", on_path=True)], []
    for i in range(n):
        ops.append(GraphOp(f"var:w{i}", f"w{i}", "Variable", "", on_path=True, is_variable=True))
        ops.append(GraphOp(f"op{i}", f"op{i}", "Square", "", on_path=True, status="passes"))
        edges.append(GraphEdge(f"var:w{i}", f"op{i}", 0, 0, "float32", [4], status="passes"))
        edges.append(GraphEdge(f"op{i}", "__target__", 0, i, "float32", [4], status="passes"))
    return Report(script="x.py", target="loss", graph=GraphDoc(ops=ops, edges=edges))


def _inside(mini: Minimap, r) -> bool:
    return (
        r.left() >= -0.5
        and r.top() >= -0.5
        and r.right() <= mini.width() + 0.5
        and r.bottom() <= mini.height() + 0.5
    )


def test_a_long_graph_is_drawn_across_the_widget_not_as_a_strip(qapp):
    view, mini = _long(qapp)
    box = view.node_items["op10"].sceneBoundingRect()
    sr = view.scene().sceneRect()
    fit = min((mini.width() - 12) / sr.width(), (mini.height() - 12) / sr.height())
    assert box.width() * fit < 2, "the test graph is not long enough to show anything"
    assert box.width() * mini._scale >= 10
    assert mini.scrolls(1) and not mini.scrolls(0)
    # the view's window leaves room around it along the graph
    assert mini.viewport_rect().height() <= mini.height() * 0.5 + 1


def test_the_band_follows_the_view_to_both_ends(qapp):
    view, mini = _long(qapp)
    bar = view.verticalScrollBar()
    tops = []
    for frac in (0, 0.25, 0.5, 0.75, 1):
        bar.setValue(round(bar.minimum() + frac * (bar.maximum() - bar.minimum())))
        r = mini.viewport_rect()
        assert _inside(mini, r), f"the view's rectangle left the minimap at {frac}: {r}"
        tops.append(mini.map_to_scene(QPointF(0, 0)).y())
    assert tops == sorted(tops) and tops[-1] > tops[0] + 1000, "the band did not scroll"
    graph = mini._graph_rect()
    assert graph.bottom() <= mini.height()  # at the end, the end of the graph is shown
    tgt = mini.map_from_scene(view.node_items["__target__"].sceneBoundingRect().center())
    assert 0 <= tgt.y() <= mini.height()


def test_a_click_in_the_band_centres_the_view_on_that_point(qapp):
    view, mini = _long(qapp)
    view.centerOn(view.node_items["op100"])
    r = mini.viewport_rect()
    at = QPoint(int(r.center().x()), int(r.bottom()) + 15)  # below the rectangle, in the band
    assert at.y() < mini.height()
    want = mini.map_to_scene(QPointF(at))
    QTest.mouseClick(mini, Qt.LeftButton, Qt.NoModifier, at)
    got = view.mapToScene(view.viewport().rect().center())
    assert abs(got.y() - want.y()) < 2 / mini._scale and abs(got.x() - want.x()) < 2 / mini._scale
    assert _inside(mini, mini.viewport_rect())


def test_the_problem_op_is_in_its_colour_in_the_band_and_on_the_indicator(qapp):
    view, mini = _long(qapp)
    raises = QColor(STYLES["raises"].color)
    view.centerOn(view.node_items["op246"])  # op250 is just below the view
    img = mini.grab().toImage()
    bad = _point(mini, view, "op250")
    assert mini.rect().contains(bad)
    assert _count(img, bad.x(), bad.y(), raises, r=3) >= 20
    # at the top of the graph op250 is far outside the band: the indicator still shows it
    view.verticalScrollBar().setValue(view.verticalScrollBar().minimum())
    img = mini.grab().toImage()
    assert not mini.rect().contains(_point(mini, view, "op250"))
    sr = view.scene().sceneRect()
    frac = (view.node_items["op250"].sceneBoundingRect().center().y() - sr.top()) / sr.height()
    y = round(2 + frac * (mini.height() - 4))
    assert _count(img, mini.width() - 4, y, raises, r=2) >= 4
    assert _count(img, mini.width() - 4, y - 12, raises, r=2) == 0  # a tick, not a line


def test_a_press_on_the_indicator_goes_to_that_part_of_the_graph(qapp):
    view, mini = _long(qapp)
    at = QPoint(mini.width() - 3, round(mini.height() * 0.75))  # 3/4 down the indicator
    QTest.mouseClick(mini, Qt.LeftButton, Qt.NoModifier, at)
    sr = view.scene().sceneRect()
    got = view.mapToScene(view.viewport().rect().center()).y()
    assert abs(got - (sr.top() + 0.75 * sr.height())) < sr.height() * 0.02


def test_the_wheel_scrolls_the_view_and_does_not_zoom(qapp):
    from PySide6.QtGui import QWheelEvent

    view, mini = _long(qapp)
    bar, zoom = view.verticalScrollBar(), view.transform().m11()
    before = bar.value()
    at = QPointF(50, 50)
    ev = QWheelEvent(
        at, at, QPoint(0, 0), QPoint(0, -120), Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False
    )  # one notch down
    QApplication.sendEvent(mini, ev)
    assert bar.value() > before and view.transform().m11() == zoom


def test_zooming_out_shrinks_the_minimap_so_the_rectangle_still_fits(qapp):
    view, mini = _long(qapp)
    renders, s0 = mini.renders, mini._scale
    view.scale(0.3, 0.3)
    view.centerOn(view.node_items["op150"])
    mini.grab()
    assert mini.renders > renders and mini._scale < s0
    assert _inside(mini, mini.viewport_rect())
    renders = mini.renders
    view.scale(4, 4)  # zooming back in past the readable zoom: the image is not drawn again
    view.scale(2, 2)
    mini.grab()
    assert mini.renders == renders + 1 and mini._scale == s0
    view.scale(1.5, 1.5)
    mini.grab()
    assert mini.renders == renders + 1


def test_the_cached_image_is_capped_and_falls_back_to_a_lower_scale(qapp, monkeypatch):
    import app.graph.minimap as mm

    view, mini = _long(qapp, n=300)
    full = mini._scale
    assert mini._image.size().height() > 600
    monkeypatch.setattr(mm, "MAX_SIDE", 600)
    mini.refresh()
    assert mini._image.size().height() <= 600 and mini._scale < full
    view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())
    assert _inside(mini, mini.viewport_rect())
    monkeypatch.setattr(mm, "MAX_AREA", 20 * 20)  # never below the whole-graph fit
    mini.refresh()
    sr = view.scene().sceneRect()
    assert mini._scale >= (mini.height() - 12) / sr.height() - 1e-9


def test_a_wide_graph_scrolls_sideways(qapp):
    view, mini = _long(qapp, report=_fan_report(), size=(300, 160))
    assert mini.scrolls(0) and not mini.scrolls(1)
    bar = view.horizontalScrollBar()
    for v in (bar.minimum(), (bar.minimum() + bar.maximum()) // 2, bar.maximum()):
        bar.setValue(v)
        assert _inside(mini, mini.viewport_rect())
    assert mini._graph_rect().right() <= mini.width()  # scrolled to the right end
    assert view.node_items["op3"].sceneBoundingRect().width() * mini._scale >= 12
    assert mini._graph_rect().height() >= 30  # not a strip along the top
