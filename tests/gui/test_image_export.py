"""Graph images: PNG, SVG and PDF from the one scene builder, with the
title line and the legend, the pixel cap, and File > Export image… (Ctrl+E) in the window.

A synthetic report stands in for an analysis: no TensorFlow in the GUI tests' process.
"""

from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ET

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QColor, QImage, QPainter
from PySide6.QtWidgets import QApplication

from app.graph.export import dialog as export_dialog
from app.graph.export import image as export
from app.graph.export.image import ExportError, check_pixels, paint, plan, write_image
from app.graph.palette import STYLES
from app.graph.panel import SHORT
from app.graph.scene import GraphScene
from tfviz.analysisfile import analysis_json
from tfviz.report import GraphDoc, GraphEdge, GraphOp, Report, VariableReport
from tfviz.structure.hierarchy import ROOT

SVG = "{http://www.w3.org/2000/svg}"


def _report() -> Report:
    """w → read → svd (no gradient: raises) → loss, with shape arithmetic off the path
    in another scope, so collapse states differ."""
    ops = [
        GraphOp("var:w", "w", "Variable", "", on_path=True, is_variable=True),
        GraphOp("enc/read", "enc/read", "ReadVariableOp", "enc", on_path=True),
        GraphOp(
            "enc/svd", "enc/svd", "Svd", "enc", on_path=True, status="unimplemented", message="no gradient"
        ),
        *(GraphOp(f"shape/s{i}", f"shape/s{i}", "StridedSlice", "shape") for i in range(8)),
        GraphOp("__target__", "loss", "Target", "", on_path=True),
    ]
    edges = [
        GraphEdge("var:w", "enc/read", 0, 0, "resource", [], status="passes"),
        GraphEdge("enc/read", "enc/svd", 0, 0, "float32", [3, 3], status="unimplemented"),
        GraphEdge("enc/svd", "__target__", 0, 0, "float32", [], status="passes"),
        *(GraphEdge(f"shape/s{i}", f"shape/s{i + 1}", 0, 0, "int32", [2]) for i in range(7)),
        GraphEdge("shape/s7", "__target__", 0, 1, "int32", []),
    ]
    var = VariableReport("w", "w:0", "float32", [3, 3], "broken", "unimplemented", blocked_at=["enc/svd"])
    return Report(
        script="/somewhere/svd_bug.py",
        target="loss",
        tensorflow="2.99.0",
        variables=[var],
        graph=GraphDoc(ops=ops, edges=edges),
    )


@pytest.fixture
def scene(qapp) -> GraphScene:
    sc = GraphScene()
    sc.set_report(_report())
    sc.expanded = sc.expansion("all")
    sc.build()
    return sc


def _near(c: QColor, ref: QColor, tol: int = 40) -> bool:
    return abs(c.red() - ref.red()) + abs(c.green() - ref.green()) + abs(c.blue() - ref.blue()) < tol


def _count(img: QImage, x0: float, y0: float, ref: QColor, r: int = 6, tol: int = 40) -> int:
    x0, y0 = round(x0), round(y0)
    return sum(
        _near(img.pixelColor(x, y), ref, tol)
        for x in range(x0 - r, x0 + r + 1)
        for y in range(y0 - r, y0 + r + 1)
        if 0 <= x < img.width() and 0 <= y < img.height()
    )


def _texts(path) -> list[str]:
    root = ET.parse(path).getroot()
    return ["".join(t.itertext()).strip() for t in root.iter(f"{SVG}text")]


def test_png_has_the_expected_size_and_the_broken_edge_in_its_colour(scene, tmp_path):
    path = tmp_path / "g.png"
    page = write_image(scene, str(path), scale=2.0)
    img = QImage(str(path))
    assert not img.isNull() and (img.width(), img.height()) == page.pixels(2.0)
    raises, passes = QColor(STYLES["raises"].color), QColor(STYLES["passes"].color)
    broken = scene.edge_routes[("var:w", "enc/svd")]  # the weight's read is drawn as the weight
    for frac in (0.25, 0.75):  # the middle holds the marker glyph
        p = page.map(broken.pointAtPercent(frac), 2.0)
        assert _count(img, p.x(), p.y(), raises) >= 3, f"no raises-coloured pixels at {frac}"
        assert _count(img, p.x(), p.y(), passes) == 0
    ok = page.map(scene.edge_routes[("enc/svd", "__target__")].pointAtPercent(0.3), 2.0)
    assert _count(img, ok.x(), ok.y(), passes) >= 3 and _count(img, ok.x(), ok.y(), raises) == 0
    corner = img.pixelColor(1, 1)
    assert (corner.red(), corner.green(), corner.blue()) == (255, 255, 255)
    p = page.map(broken.pointAtPercent(0.25), 2.0)
    assert _count(img, p.x(), p.y(), raises, tol=1) >= 1, "the status colour is not kept exactly"
    assert not img.hasAlphaChannel()  # 8-bit RGB, nothing to composite against in a viewer
    assert img.text("Title") == page.title and "tfviz" in img.text("Software")
    assert img.dotsPerMeterX() > 0


@pytest.mark.parametrize("band_pixels", [export.BAND_PIXELS, 5_000])
def test_png_holds_exactly_the_pixels_drawn(scene, tmp_path, monkeypatch, band_pixels):
    """Drawn band by band (thin bands: a seam every few rows), deflated in parallel, the
    PNG holds exactly what one painter draws on one image."""
    monkeypatch.setattr(export, "BAND_PIXELS", band_pixels)
    path = tmp_path / "g.png"
    page = write_image(scene, str(path), scale=1.5)
    drawn = QImage(*page.pixels(1.5), QImage.Format_RGB32)
    drawn.fill(QColor("white"))
    p = QPainter(drawn)
    p.scale(1.5, 1.5)
    paint(scene, page, p)
    p.end()
    got = QImage(str(path)).convertToFormat(QImage.Format_RGB32)
    assert got == drawn


def test_svg_keeps_op_names_title_and_legend_as_text(scene, tmp_path):
    path = tmp_path / "g.svg"
    write_image(scene, str(path))
    texts = _texts(path)  # parses as XML
    titles = {it.title for it in scene.node_items.values()}
    assert any("svd" in t for t in titles) and "loss" in titles, titles
    for title in titles:
        assert any(title in t for t in texts), f"{title!r} is not text in the SVG"
    head = [t for t in texts if t.startswith("svd_bug.py")]
    assert head and "loss" in head[0] and "TensorFlow 2.99.0" in head[0] and "1 variable broken" in head[0]
    for word in SHORT.values():
        assert word in texts, f"legend word {word!r} missing"
    assert STYLES["raises"].color.lower() in path.read_text().lower()
    # group frames are cached as pixmaps on screen; in the file they are drawn, titles as text
    assert any(t.endswith("enc  ·  2 ops") for t in texts)
    assert ET.parse(path).getroot().find(f".//{SVG}image") is None


def test_svg_opens_in_browsers_at_its_size_in_known_fonts(scene, tmp_path):
    """Width and height in pixels, as the viewBox (Qt writes millimetres at the screen's
    DPI), and every font family ends in a generic one browsers have (Qt writes "Sans",
    which only fontconfig knows)."""
    path = tmp_path / "g.svg"
    page = write_image(scene, str(path))
    root = ET.parse(path).getroot()
    w, h = int(root.get("width")), int(root.get("height"))
    assert root.get("viewBox").split() == ["0", "0", str(w), str(h)]
    assert (w, h) == (math.ceil(page.width), math.ceil(page.height))
    families = {el.get("font-family") for el in root.iter() if el.get("font-family")}
    assert families and all(f.endswith(", sans-serif") and f.startswith("'") for f in families), families
    assert not any(el.get("vector-effect") not in (None, "none", "non-scaling-stroke") for el in root.iter())


def test_pdf_is_one_page_sized_to_the_content(scene, tmp_path):
    path = tmp_path / "g.pdf"
    page = write_image(scene, str(path))
    data = path.read_bytes()
    assert data.startswith(b"%PDF")
    assert len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", data)) == 1
    box = [float(v) for v in re.search(rb"/MediaBox\s*\[([^\]]*)\]", data).group(1).split()]
    ratio = (box[2] - box[0]) / (box[3] - box[1])
    assert ratio == pytest.approx(page.width / page.height, rel=0.02)


def test_pixel_cap_refuses_and_names_a_scale_that_fits(scene, tmp_path):
    path = tmp_path / "big.png"
    page = plan(scene)
    cap = 2_000_000
    with pytest.raises(ExportError) as info:
        write_image(scene, str(path), scale=10.0, cap=cap)
    msg = str(info.value)
    assert "2 MP limit" in msg and "SVG or PDF" in msg and " px" in msg
    fit = float(re.search(r"use scale ([0-9.]+) or less", msg).group(1))
    check_pixels(page, fit, cap)  # the scale it names fits
    with pytest.raises(ExportError):
        check_pixels(page, fit + 0.01, cap)  # and is the largest that does
    assert os.listdir(tmp_path) == []  # no file, no temporary left behind


def test_collapse_states_and_export_level_of_detail(qapp, tmp_path):
    sc = GraphScene()
    sc.set_report(_report())
    svd_chain = set(sc.hierarchy.chain["enc/svd"])
    assert sc.expansion("none") == {ROOT}
    assert sc.expansion("problems") == {ROOT} | svd_chain  # not the off-path shape scope
    assert sc.expansion("problems") < sc.expansion("all") == set(sc.hierarchy.groups)
    counts = {}
    for mode in ("none", "problems", "all"):
        sc.expanded = sc.expansion(mode)
        sc.build()
        counts[mode] = len(sc.node_items)
    assert counts["none"] < counts["problems"] < counts["all"]
    # zoomed far out on screen, the export still draws every node in full detail
    sc.set_far(True, 0.01)
    write_image(sc, str(tmp_path / "far.svg"))
    assert any("svd" in t for t in _texts(tmp_path / "far.svg"))
    assert sc.far is True and not sc.tiles[0].isVisible()  # the screen's state is restored
    with pytest.raises(ExportError, match="there is no graph"):
        empty = GraphScene()
        empty.set_report(None)
        write_image(empty, str(tmp_path / "none.png"))


@pytest.fixture
def fresh(qtbot):
    from app.window import MainWindow
    from app.worker_client import WorkerPool

    w = MainWindow(pool=WorkerPool(spare=False))
    qtbot.addWidget(w)
    w.resize(1200, 800)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_ctrl_e_exports_the_visible_area(fresh, qtbot, tmp_path, monkeypatch):
    action = next(a for a in fresh.findChildren(QAction) if a.text().replace("&", "") == "Export image…")
    assert action.shortcut().toString() == "Ctrl+E"
    assert not action.isEnabled()  # no graph yet
    saved = tmp_path / "svd_bug.json"
    saved.write_text(analysis_json(_report()))
    fresh.open_script(str(saved))
    qtbot.waitUntil(lambda: fresh.analysis.report is not None, timeout=60_000)  # read on a thread
    view = fresh.graph.view
    assert view.hierarchy is not None and action.isEnabled()
    view.set_all_expanded(True)
    view.resetTransform()
    view.scale(3.0, 3.0)
    view.centerOn(view.node_items["enc/svd"])
    # Offscreen there is no window manager to hand the activation back when the opening
    # progress dialog (shown on a busy machine) closes: activate the window as a click would,
    # and wait until it is active before the key.
    fresh.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is fresh, timeout=5000)
    qtbot.keyClick(fresh, Qt.Key_E, Qt.ControlModifier)
    dlg = fresh.image_export.dialog
    assert dlg.isVisible()
    visible, content = export_dialog.visible_rect(view), view.content_rect()
    assert visible.height() < content.height()  # a part of the graph, not all of it
    dlg.visible.setChecked(True)
    whole = plan(view.scene())
    expected = plan(view.scene(), visible).pixels(1.0)
    assert dlg.size.text().startswith(f"{expected[0]:,}".replace(",", " "))
    dlg.cap = 1000  # past the cap: said, and no export
    dlg.refresh()
    assert "limit" in dlg.warning.text() and not dlg.export_button.isEnabled()
    warn = dlg.warning  # the whole warning is on screen, not cut at the dialog's edge
    assert warn.isVisible() and warn.height() >= warn.heightForWidth(warn.width())
    assert warn.geometry().bottom() < dlg.fit.geometry().top()
    dlg.cap = export_dialog.PIXEL_CAP
    dlg.refresh()
    assert dlg.export_button.isEnabled() and dlg.warning.text() == ""
    out = tmp_path / "visible.png"
    monkeypatch.setattr(export_dialog.QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
    dlg.export_button.click()
    qtbot.waitUntil(lambda: not dlg.isVisible())
    img = QImage(str(out))
    assert (img.width(), img.height()) == expected != whole.pixels(1.0)
    assert str(out) in fresh.stage.text() and "visible area" in fresh.stage.text()


def test_magnitude_overlay_exports_its_scale(qapp, tmp_path):
    r = _report()
    r.graph.edges[0].grad_norm, r.graph.edges[2].grad_norm = 1e-3, 10.0
    sc = GraphScene()
    sc.set_report(r)
    sc.magnitude = True
    sc.build()
    write_image(sc, str(tmp_path / "m.svg"))
    texts = _texts(tmp_path / "m.svg")
    assert any(t.startswith("gradient norm") and "1e-3" in t for t in texts) and "1e1" in texts


def test_pdf_of_a_tall_graph_stays_within_what_readers_open(qapp, tmp_path):
    """Acrobat refuses pages over 200 inches: a long chain is one page, scaled to fit."""
    ops = [GraphOp(f"op{i}", f"op{i}", "Relu", "", on_path=True) for i in range(300)]
    ops.append(GraphOp("__target__", "loss", "Target", "", on_path=True))
    edges = [GraphEdge(a.id, b.id, 0, 0, "float32", [1], status="passes") for a, b in zip(ops, ops[1:])]
    sc = GraphScene()
    sc.set_report(Report(script="long.py", target="loss", graph=GraphDoc(ops=ops, edges=edges)))
    sc.build()
    page = write_image(sc, str(tmp_path / "long.pdf"))
    data = (tmp_path / "long.pdf").read_bytes()
    box = [float(v) for v in re.search(rb"/MediaBox\s*\[([^\]]*)\]", data).group(1).split()]
    w, h = box[2] - box[0], box[3] - box[1]
    assert page.height * 72 / 96 > 14_400 >= max(w, h) > 14_000
    assert w / h == pytest.approx(page.width / page.height, rel=0.02)
    assert len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", data)) == 1
