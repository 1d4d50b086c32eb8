"""Pixel probes on a rendered view: statuses are drawn in their legend colours."""

from __future__ import annotations

from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QApplication

from app.graph.palette import STYLES
from app.graph.view import GraphView
from tfviz.report import GraphDoc, GraphEdge, GraphOp, Report


def _report() -> Report:
    ops = [
        GraphOp("var:w", "w", "Variable", "", on_path=True, is_variable=True),
        GraphOp("read", "read", "ReadVariableOp", "", on_path=True),
        GraphOp("svd", "svd", "Svd", "", on_path=True, status="unimplemented", message="no gradient"),
        GraphOp("__target__", "loss", "Target", "", on_path=True),
    ]
    edges = [
        GraphEdge("var:w", "read", 0, 0, "resource", [], status="passes"),
        GraphEdge("read", "svd", 0, 0, "float32", [3, 3], status="unimplemented"),
        GraphEdge("svd", "__target__", 0, 0, "float32", [], status="passes"),
    ]
    return Report(script="x.py", target="loss", graph=GraphDoc(ops=ops, edges=edges))


def _near(c: QColor, ref: QColor, tol: int = 40) -> bool:
    return abs(c.red() - ref.red()) + abs(c.green() - ref.green()) + abs(c.blue() - ref.blue()) < tol


def render_view(view) -> QImage:
    """What the view shows, drawn into an image (offscreen ``grab`` would do too, slower)."""
    QApplication.processEvents()
    img = QImage(view.viewport().size(), QImage.Format_ARGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    view.render(p)
    p.end()
    return img


def _count(img: QImage, x0: int, y0: int, ref: QColor, r: int = 6) -> int:
    return sum(
        _near(img.pixelColor(x, y), ref)
        for x in range(x0 - r, x0 + r + 1)
        for y in range(y0 - r, y0 + r + 1)
        if 0 <= x < img.width() and 0 <= y < img.height()
    )


def test_broken_edge_drawn_in_its_status_colour(qapp):
    view = GraphView()
    view.resize(500, 600)
    view.show()
    view.set_report(_report())
    img = render_view(view)
    raises, passes = QColor(STYLES["raises"].color), QColor(STYLES["passes"].color)
    broken = view.edge_routes[("var:w", "svd")]  # the read is drawn as the weight
    ok = view.edge_routes[("svd", "__target__")]
    for frac in (0.25, 0.75):  # the middle holds the marker glyph
        bp = view.mapFromScene(broken.pointAtPercent(frac))
        assert _count(img, bp.x(), bp.y(), raises) >= 3, f"no raises-coloured pixels at {frac}"
        assert _count(img, bp.x(), bp.y(), passes) == 0
    op = view.mapFromScene(ok.pointAtPercent(0.5))
    assert _count(img, op.x(), op.y(), passes) >= 3
    assert _count(img, op.x(), op.y(), raises) == 0
    # the node where the gradient stops has a border in the same colour
    item = view.node_items["svd"]
    corner = view.mapFromScene(item.mapToScene(item.boundingRect().center().x(), 0))
    assert _count(img, corner.x(), corner.y(), raises, r=3) >= 3
