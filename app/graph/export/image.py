"""Graph images: a :class:`GraphScene` as PNG, SVG or PDF, with a title line and the legend.

The window's Export image dialog and the headless ``tfviz export -o graph.svg`` both draw
through :func:`write_image`, from the scene the one builder made, so the file shows what
the window shows. Above the graph, a header says what the picture is (script, target,
TensorFlow version, the verdict) and carries the legend, with the window's words, so the
image explains itself in a bug report or on a slide.

Nothing half-done is ever left at the destination: the file is written beside it under a
temporary name and renamed into place when complete (:func:`tfviz.outputs.temporary_beside`),
and only ever onto a regular file. An SVG holds only characters XML can hold
(:func:`xml_text`). A PNG past the pixel cap is refused before anything is drawn, with the
largest scale that fits.
"""

from __future__ import annotations

import math
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QBuffer, QIODevice, QMarginsF, QPointF, QRectF, QSize, QSizeF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontInfo,
    QFontMetricsF,
    QGuiApplication,
    QImage,
    QPageSize,
    QPainter,
    QPdfWriter,
    QPen,
)
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QGraphicsItem

from tfviz.graphformats import IMAGE_FORMATS, verdict
from tfviz.outputs import SIGNATURE, temporary_beside, xml_safe
from tfviz.version import __version__

from ... import theme
from ..items import paint_ramp
from ..palette import STYLES, pen_for, text_color
from ..panel import SHORT  # the window's legend words
from ..scene import GraphScene
from .pngfile import write_png

#: PNGs larger than this many pixels are refused: past it, image viewers and browsers
#: struggle (a decoded 64 MP image is 256 MB); the file itself is drawn a band at a time.
PIXEL_CAP = 64_000_000
#: PDF readers (Acrobat) refuse pages larger than 200 inches; bigger graphs are scaled down.
PDF_MAX_PT = 14_400.0
PAD = 24.0
#: a PNG is drawn in bands of this many pixels (16 MB): fewer, and the drawing waits for
#: memory and the encoder for work; more, and items across band edges are drawn again
BAND_PIXELS = 4_000_000
#: A status drawn in each legend category's style (``raises`` and ``cut`` are categories).
_SAMPLE = {"raises": "unimplemented", "cut": "frozen_copy"}
_SAMPLE_W, _GAP, _SPACING = 34.0, 5.0, 16.0


class ExportError(Exception):
    """The image cannot be written; the message says why and what to do instead."""


def _font(pt: float, bold: bool = False) -> QFont:
    f = QFont("Sans")
    f.setPointSizeF(pt)
    f.setBold(bold)
    return f


@dataclass
class Page:
    """Where everything goes, in scene units at scale 1: the header, then ``source`` (the
    part of the scene drawn) at ``target``."""

    source: QRectF
    width: float
    height: float
    title: str
    legend: list[tuple[QPointF, str]] = field(default_factory=list)  # entry origin, key
    ramp: tuple[QPointF, float, float] | None = None  # magnitude scale: origin, log10 lo, hi
    header: float = 0.0
    zoom: float = 1.0  # the header's size against the graph

    @property
    def target(self) -> QRectF:
        return QRectF(PAD, self.header, self.source.width(), self.source.height())

    def map(self, p: QPointF, scale: float = 1.0) -> QPointF:
        """A scene point's place in the image (in pixels, for a PNG at ``scale``)."""
        t = self.target
        return QPointF((t.x() + p.x() - self.source.x()) * scale, (t.y() + p.y() - self.source.y()) * scale)

    def pixels(self, scale: float) -> tuple[int, int]:
        return math.ceil(self.width * scale), math.ceil(self.height * scale)


def title_line(scene: GraphScene) -> str:
    """What the picture is: "train.py  ·  loss  ·  TensorFlow 2.16.1  —  2 variables disconnected"."""
    r = scene.report
    if r is None:
        return ""
    target = r.target if len(r.target) <= 80 else r.target[:79] + "…"
    parts = [os.path.basename(r.script) or r.script, target]
    if r.tensorflow:
        parts.append(f"TensorFlow {r.tensorflow}")
    return "  ·  ".join(parts) + "  —  " + verdict(r)


def plan(scene: GraphScene, source: QRectF | None = None) -> Page:
    """Lay out the page for ``source`` (default: the whole graph); raises ExportError
    when there is no graph. On a wide graph the header grows with it (up to 4×), so the
    title stays readable when the whole image is shown on a screen or a slide."""
    if scene.hierarchy is None or not scene.node_items:
        raise ExportError("there is no graph to export")
    src = QRectF(source) if source is not None else scene.content_rect().adjusted(-20, -20, 20, 20)
    if src.isEmpty():
        raise ExportError("the area to export is empty")
    title = title_line(scene)
    tfm, lfm, bfm = QFontMetricsF(_font(11, True)), QFontMetricsF(_font(8.5)), QFontMetricsF(_font(8.5, True))
    zoom = min(max(src.width() / 1600.0, 1.0), 4.0)
    inner = max(src.width() / zoom, min(tfm.horizontalAdvance(title), 1400.0), 520.0)
    page = Page(src, 0.0, 0.0, tfm.elidedText(title, Qt.TextElideMode.ElideMiddle, inner), zoom=zoom)
    y = PAD + tfm.height() + 8
    row_h = max(lfm.height(), 12.0) + 4
    x = PAD
    widths = [
        (
            k,
            _SAMPLE_W
            + _GAP
            + (bfm.horizontalAdvance(st.marker + " ") if st.marker else 0)
            + lfm.horizontalAdvance(SHORT[k]),
        )
        for k, st in STYLES.items()
    ]
    if scene.magnitude:
        lo, hi = scene.magnitude_range()
        widths.append(("", lfm.horizontalAdvance(f"gradient norm  1e{round(lo)} 1e{round(hi)}") + 130))
    for key, w in widths:
        if x > PAD and x + w > PAD + inner:
            x, y = PAD, y + row_h
        if key:
            page.legend.append((QPointF(x, y), key))
        else:
            page.ramp = (QPointF(x, y), lo, hi)
        x += w + _SPACING
    page.header = (y + row_h + 10) * zoom
    page.width = max(src.width(), inner * zoom) + 2 * PAD
    page.height = page.header + src.height() + PAD
    return page


def paint(scene: GraphScene, page: Page, painter: QPainter) -> None:
    """Draw ``page`` at the painter's scale: white, header, legend, then the graph in
    full detail (never the zoomed-out overview)."""
    with full_detail(scene, painter.worldTransform().m11()):
        draw(scene, page, painter)


@contextmanager
def full_detail(scene: GraphScene, scale: float):
    """The scene as it is drawn in a file: every item (no overview paths at any zoom),
    none from a cache (group frames would be pixmaps: blurred text, images in SVG/PDF)."""
    far, lod = scene.far, scene.lod_scale
    scene.set_far(False, max(scale, 1e-3))
    cached = [
        (it, it.cacheMode()) for it in scene.items() if it.cacheMode() != QGraphicsItem.CacheMode.NoCache
    ]
    for it, _ in cached:
        it.setCacheMode(QGraphicsItem.CacheMode.NoCache)
    try:
        yield
    finally:
        for it, mode in cached:
            it.setCacheMode(mode)
        if far is not None:
            scene.set_far(far, lod)


def draw(scene: GraphScene, page: Page, painter: QPainter, rows: tuple[float, float] | None = None) -> None:
    """:func:`paint` inside :func:`full_detail`; with ``rows`` (top, bottom, in page
    units), only what lies between them: a band of a PNG drawn band by band."""
    painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
    painter.fillRect(QRectF(0, 0, page.width, page.height), QColor("white"))
    if rows is None or rows[0] < page.header:
        _paint_header(page, painter)
    target, source = page.target, page.source
    if rows is not None:
        top, bottom = max(rows[0], target.top()), min(rows[1], target.bottom())
        if top >= bottom:
            return
        source = QRectF(source.x(), source.y() + top - target.top(), source.width(), bottom - top)
        target = QRectF(target.x(), top, target.width(), bottom - top)
    scene.render(painter, target, source, Qt.AspectRatioMode.IgnoreAspectRatio)


def _paint_header(page: Page, painter: QPainter) -> None:
    painter.save()
    painter.scale(page.zoom, page.zoom)
    tf = _font(11, True)
    painter.setFont(tf)
    painter.setPen(QColor(theme.INK_STRONG))
    painter.drawText(QPointF(PAD, PAD + QFontMetricsF(tf).ascent()), page.title)
    lf, bf = _font(8.5), _font(8.5, True)
    lfm, bfm = QFontMetricsF(lf), QFontMetricsF(bf)
    for at, key in page.legend:
        st = STYLES[key]
        mid = at.y() + lfm.height() / 2
        painter.setPen(QPen(pen_for(_SAMPLE.get(key, key))))
        painter.drawLine(QPointF(at.x() + 1, mid), QPointF(at.x() + _SAMPLE_W - 1, mid))
        x = at.x() + _SAMPLE_W + _GAP
        base = at.y() + lfm.ascent()
        if st.marker:
            painter.setFont(bf)
            painter.setPen(QColor(text_color(key) if key != "off_path" else theme.OFF_PATH_INK))
            painter.drawText(QPointF(x, base), st.marker)
            x += bfm.horizontalAdvance(st.marker + " ")
        painter.setFont(lf)
        painter.setPen(QColor(theme.LEGEND_INK))
        painter.drawText(QPointF(x, base), SHORT[key])
    if page.ramp is not None:
        _paint_ramp(painter, *page.ramp, lf)
    painter.restore()
    painter.setPen(QPen(QColor(theme.RULE), page.zoom))
    painter.drawLine(
        QPointF(PAD, page.header - 5 * page.zoom), QPointF(page.width - PAD, page.header - 5 * page.zoom)
    )


def _paint_ramp(painter: QPainter, at: QPointF, lo: float, hi: float, font: QFont) -> None:
    """The magnitude overlay's scale: log10 of the gradient norm, low to high."""
    fm = QFontMetricsF(font)
    painter.setFont(font)
    painter.setPen(QColor(theme.LEGEND_INK))
    base = at.y() + fm.ascent()
    label = f"gradient norm  1e{round(lo)} "
    painter.drawText(QPointF(at.x(), base), label)
    x = at.x() + fm.horizontalAdvance(label)
    paint_ramp(painter, QRectF(x, at.y() + 2, 100, fm.height() - 4), lo, hi)
    painter.drawText(QPointF(x + 104, base), f"1e{round(hi)}")


def size_text(w: int, h: int) -> str:
    """>>> size_text(4210, 2980)
    '4 210 × 2 980 px, 12.5 MP'"""
    sep = lambda n: f"{n:,}".replace(",", " ")
    return f"{sep(w)} × {sep(h)} px, {w * h / 1e6:.1f} MP"


def max_scale(page: Page, cap: int = PIXEL_CAP) -> float:
    """The largest PNG scale (two decimals) under ``cap`` pixels; 0 when none is."""
    s = math.floor(math.sqrt(cap / max(page.width * page.height, 1e-9)) * 100) / 100
    while s > 0 and math.prod(page.pixels(s)) > cap:
        s = round(s - 0.01, 2)
    return max(s, 0.0)


def check_pixels(page: Page, scale: float, cap: int = PIXEL_CAP) -> tuple[int, int]:
    """The PNG's size at ``scale``; raises ExportError past ``cap``, saying what fits."""
    if not scale > 0 or not math.isfinite(scale):
        raise ExportError(f"the scale must be a positive number, not {scale}")
    w, h = page.pixels(scale)
    if w * h <= cap:
        return w, h
    fit = max_scale(page, cap)
    instead = f"use scale {fit:g} or less, or" if fit >= 0.01 else "use"
    raise ExportError(
        f"a PNG at scale {scale:g} would be {size_text(w, h)}, over the"
        f" {cap / 1e6:g} MP limit: {instead} SVG or PDF (vector, any size)"
    )


def _dpi() -> int:
    """The screen's logical DPI, so that point-sized fonts keep their size against the graph."""
    screen = QGuiApplication.primaryScreen()
    return round(screen.logicalDotsPerInchY()) if screen is not None else 96


def write_image(
    scene: GraphScene,
    path: str,
    fmt: str | None = None,
    *,
    scale: float = 1.0,
    source: QRectF | None = None,
    cap: int = PIXEL_CAP,
) -> Page:
    """Write the scene (or its ``source`` rect) to ``path`` as PNG, SVG or PDF; the page
    drawn. Raises ExportError, with the file left untouched, when it cannot."""
    fmt = (fmt or os.path.splitext(path)[1].lstrip(".")).lower()
    if fmt not in IMAGE_FORMATS:
        raise ExportError(f"cannot draw a .{fmt} image: use .png, .svg or .pdf")
    page = plan(scene, source)
    if fmt == "png":
        size = check_pixels(page, scale, cap)
    try:
        with temporary_beside(path) as tmp:  # renamed onto path only once complete
            if fmt == "png":
                _png(scene, page, tmp, scale, size)
            elif fmt == "svg":
                _svg(scene, page, tmp)
            else:
                _pdf(scene, page, tmp)
            if os.path.getsize(tmp) == 0:
                raise ExportError(f"cannot write {path}: nothing was written")
    except OSError as exc:  # an OutputError says why in words
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from None
    return page


def _png(scene: GraphScene, page: Page, tmp: str, scale: float, size: tuple[int, int]) -> None:
    """Drawn band by band into opaque 32-bit images (Qt's fastest to paint), each band
    deflated on another thread by :mod:`pngfile` while the next is drawn: 6x faster than
    drawing the whole image and saving it with Qt's encoder, in a few bands of memory."""
    w, h = size
    rows = max(1, BAND_PIXELS // w)
    # RGB32 is 0xffRRGGBB in native byte order: B, G, R, X in memory on little-endian CPUs
    order = (2, 1, 0) if sys.byteorder == "little" else (1, 2, 3)

    def bands():
        with full_detail(scene, scale):
            for y in range(0, h, rows):
                n = min(rows, h - y)
                try:
                    px = np.empty((n, w, 4), np.uint8)
                except MemoryError:
                    raise ExportError(
                        f"not enough memory for a {size_text(*size)} image: use a smaller"
                        " scale, or SVG or PDF"
                    ) from None
                img = QImage(px.data, w, n, 4 * w, QImage.Format.Format_RGB32)  # paints into px
                img.fill(QColor("white"))
                p = QPainter(img)
                try:
                    p.translate(0, -y)
                    p.scale(scale, scale)
                    margin = 2 / scale  # a pixel or two past the band: antialiased edges
                    draw(scene, page, p, ((y / scale) - margin, (y + n) / scale + margin))
                finally:
                    p.end()
                yield px

    with open(tmp, "wb") as out:
        write_png(
            out,
            w,
            h,
            bands(),
            order,
            dots_per_meter=round(_dpi() / 0.0254),
            text={"Title": page.title, "Software": f"{SIGNATURE} {__version__}"},
        )


def _svg(scene: GraphScene, page: Page, tmp: str) -> None:
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    gen = QSvgGenerator()
    gen.setOutputDevice(buf)
    gen.setResolution(_dpi())
    w, h = math.ceil(page.width), math.ceil(page.height)
    gen.setSize(QSize(w, h))
    gen.setViewBox(QRectF(0, 0, w, h))
    gen.setTitle(page.title)
    gen.setDescription(f"{SIGNATURE} {__version__}")
    _paint_on(gen, "SVG", scene, page)
    with open(tmp, "wb") as out:
        out.write(for_browsers(xml_text(bytes(buf.data().data())), w, h))


def xml_text(svg: bytes) -> bytes:
    """Qt's SVG with every character XML 1.0 cannot hold written as an escape
    (:func:`~tfviz.outputs.xml_safe`): Qt writes an op name's ESC or NUL as it is, and no
    XML reader opens the file then. ``tfviz export`` escapes the names before the layout
    (:func:`tfviz.commands.export.draw`); the window's scene holds the names as they are, so its
    export escapes the file (Qt's markup holds none of those characters)."""
    return xml_safe(svg.decode("utf-8", "surrogateescape")).encode("utf-8")


_FAMILY = re.compile(rb'font-family="([^"]*)"')


def for_browsers(svg: bytes, w: int, h: int) -> bytes:
    """Qt's SVG as browsers and other renderers draw it like Qt: the size in pixels (Qt
    writes millimetres at the screen's DPI, so a 72-DPI screen's file opened 4/3 too
    large), and each font family as the one Qt measured the text with, then the generic
    ``sans-serif`` (Qt writes the requested name, "Sans", which only fontconfig knows:
    browsers fell back to a serif font)."""
    size = f'<svg width="{w}" height="{h}"'.encode()
    svg = re.sub(rb'<svg width="[^"]*" height="[^"]*"', size, svg, count=1)
    families: dict[bytes, bytes] = {}

    def css(m: re.Match) -> bytes:
        name = m.group(1)
        if name not in families:
            got = QFontInfo(QFont(name.decode())).family().replace("'", "").replace('"', "")
            families[name] = ('font-family="' + (f"'{got}', " if got else "") + 'sans-serif"').encode()
        return families[name]

    return _FAMILY.sub(css, svg)


def _pdf(scene: GraphScene, page: Page, tmp: str) -> None:
    """One page the size of the content; past :data:`PDF_MAX_PT` the resolution rises so the
    page stays readable everywhere (the drawing, in device pixels, does not change)."""
    dpi = _dpi()
    side = max(page.width, page.height) * 72.0 / dpi
    if side > PDF_MAX_PT:
        dpi = math.ceil(dpi * side / PDF_MAX_PT)
    pdf = QPdfWriter(tmp)
    pdf.setCreator(f"{SIGNATURE} {__version__}")
    pdf.setTitle(page.title)
    pdf.setResolution(dpi)
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0))
    size = QSizeF(page.width * 72.0 / dpi, page.height * 72.0 / dpi)
    pdf.setPageSize(QPageSize(size, QPageSize.Unit.Point, "tfviz", QPageSize.SizeMatchPolicy.ExactMatch))
    _paint_on(pdf, "PDF", scene, page)


def _paint_on(device, what: str, scene: GraphScene, page: Page) -> None:
    p = QPainter()
    if not p.begin(device):
        raise ExportError(f"could not start the {what} file")
    try:
        paint(scene, page, p)
    finally:
        p.end()
