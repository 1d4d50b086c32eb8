"""One Jacobian as a pyqtgraph heatmap: rows are output elements, columns input elements.

The colour map is diverging and centred on zero (blue negative, white zero, red
positive: the same ends as ``tfviz jacobian -o out.png``, :mod:`tfviz.jacobian.png`),
scaled to the largest magnitude; *log magnitude* shows log10 |J| instead on a
sequential map, with exact zeros left blank. Faint lines mark the boundaries of
the tensors' leading dimensions, so a (3,4)x(2,5) Jacobian reads as 3x2 blocks.
Hovering reports the element under the cursor (``hovered``).

A matrix with more rows or columns than the view has pixels is pooled by max |J|
per block (:func:`tfviz.jacobian.pool.pool_max_abs`): averaging or striding makes
the few nonzeros of a conv layer's Jacobian vanish, the block maximum keeps every
one visible. The label under the plot says what one pixel shows. Pooling a large
matrix runs on a thread (numpy's reductions release the GIL), so the window keeps
answering; ``drawn`` is emitted once the image is up.
"""

from __future__ import annotations

import threading

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsPathItem

from tfviz.jacobian.png import _MID, _NEG, _POS
from tfviz.jacobian.pool import pool_max_abs, zoom_text

from .. import theme

#: Blue, white, red at -max, 0, +max (the CLI's PNG colours).
DIVERGING = pg.ColorMap([0.0, 0.5, 1.0], [tuple(int(c) for c in x) for x in (_NEG, _MID, _POS)])
SEQUENTIAL = pg.colormap.get("viridis")
#: Entries of the lookup table: enough that neighbouring values never share a colour visibly.
LUT_SIZE = 1024
#: Orders of magnitude shown in log mode below the largest |J|.
LOG_DECADES = 8
#: More block boundaries than this along an axis are not drawn (they would only grey it out).
MAX_LINES = 120
#: Matrices with more elements than this are pooled on a thread, not on the GUI thread.
THREAD_ELEMENTS = 1_000_000


def max_abs(a: np.ndarray) -> float:
    """The largest finite |value| (1.0 when there is none, so the levels stay valid)."""
    hi, lo = float(np.nanmax(a)), float(np.nanmin(a))
    m = max(abs(hi), abs(lo))
    if not np.isfinite(m):
        f = a[np.isfinite(a)]
        m = float(np.max(np.abs(f))) if f.size else 0.0
    return m if m > 0 else 1.0


def block_size(shape: list[int]) -> int:
    """Flat elements per index of the leading dimension (0: no blocks worth drawing)."""
    if len(shape) < 2 or shape[0] < 2:
        return 0
    inner = int(np.prod(shape[1:]))
    return inner if inner > 1 and shape[0] <= MAX_LINES else 0


class IndexAxis(pg.AxisItem):
    """Whole element indices, each at the centre of its row or column."""

    def tickValues(self, minVal, maxVal, size):  # noqa: N802,N803 - pyqtgraph's names
        minVal, maxVal = sorted((minVal, maxVal))  # an inverted axis may give them swapped
        levels = super().tickValues(minVal, maxVal, size)
        step = max(1, int(np.ceil(levels[0][0]))) if levels else 1
        first = int(np.ceil((minVal - 0.5) / step)) * step
        last = int(np.floor(maxVal - 0.5))
        return [(step, [k + 0.5 for k in range(max(first, 0), last + 1, step)])]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph's name
        return [str(int(round(v - 0.5))) for v in values]


def shorter_titles(title: str) -> list[str]:
    """An axis title, then shorter ones that keep what tells it apart: the tensor without
    its scopes, then without its shape, then the element count alone beside it, then the
    tensor and its slice alone.

    >>> for t in shorter_titles("convnet/conv/Relu[0,:,:,0] (8, 24, 24, 16): 576 output elements"):
    ...     print(t)
    convnet/conv/Relu[0,:,:,0] (8, 24, 24, 16): 576 output elements
    Relu[0,:,:,0] (8, 24, 24, 16): 576 output elements
    Relu[0,:,:,0]: 576 output elements
    Relu[0,:,:,0]: 576
    Relu[0,:,:,0]
    """
    name, sep, rest = title.partition(" ")
    if not sep:
        return [title]
    head = name.rsplit("/", 1)[-1]
    count = rest.rsplit(": ", 1)
    out = [title, f"{head} {rest}"]
    if len(count) == 2:
        out.append(f"{head}: {count[1]}")
        out.append(f"{head}: {count[1].split(' ')[0]}")
    out.append(head)  # the tensor and its slice: what the rows are
    return list(dict.fromkeys(out))


class Heatmap(pg.GraphicsLayoutWidget):
    """A zoomable heatmap of a (rows, cols) matrix with a colour bar."""

    hovered = Signal(int, int, float)  # row, col, value (row -1: the cursor left the image)
    drawn = Signal()  # the image of the last set_matrix is shown
    _pooled = Signal(object)  # (token, pooled matrix, block size) from the pooling thread

    def __init__(self, parent=None, title: str = "", compact: bool = False):
        super().__init__(parent)
        self.setBackground("w")
        self.plot = self.addPlot(
            title=title, axisItems={"left": IndexAxis("left"), "bottom": IndexAxis("bottom")}
        )
        self.plot.setMenuEnabled(False)
        self.plot.invertY(True)  # row 0 (the first output element) at the top
        self.plot.setAspectLocked(False)
        self.plot.hideButtons()
        for name in ("left", "bottom"):
            ax = self.plot.getAxis(name)
            ax.setPen(pg.mkPen(theme.LABEL_INK))
            ax.setTextPen(pg.mkPen(theme.INK))
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.bar = pg.ColorBarItem(
            values=(-1, 1), colorMap=DIVERGING, interactive=False, width=12 if compact else 16
        )
        self.bar.axis.enableAutoSIPrefix(False)
        self.bar.setImageItem(self.image, insert_in=self.plot)
        self.grid = QGraphicsPathItem()
        self.grid.setPen(QPen(QColor(0, 0, 0, 60), 0))  # cosmetic: one pixel at any zoom
        self.grid.setZValue(5)
        self.plot.addItem(self.grid)
        self.zoom = self.addLabel("", row=1, col=0, size="8pt", color=theme.LABEL_INK, justify="right")
        self.matrix = np.zeros((0, 0), np.float32)
        self.shown = self.matrix  # what the image draws: the matrix, or its max-|J| pooling
        self.blocks = (1, 1)  # elements per pixel (rows, cols)
        self.busy = False  # pooling on its thread
        self._token = 0
        self._pooled.connect(self._take_pooled)
        self.log = False
        self.scale = 1.0
        self.scene().sigMouseMoved.connect(self._mouse_moved)
        self._lut_div = DIVERGING.getLookupTable(0.0, 1.0, LUT_SIZE, alpha=False)
        self._lut_seq = SEQUENTIAL.getLookupTable(0.0, 1.0, LUT_SIZE, alpha=False)

    # -- data ---------------------------------------------------------------------
    def set_matrix(
        self,
        matrix: np.ndarray,
        out_shape: list[int] | None = None,
        in_shape: list[int] | None = None,
        *,
        log: bool | None = None,
    ) -> None:
        """Show ``matrix`` (rows: output elements, cols: input elements). ``out_shape`` /
        ``in_shape`` (the tensors' shapes, unsliced) give the block lines."""
        m = np.asarray(matrix)
        if m.dtype not in (np.float32, np.float64):
            m = m.astype(np.float32)
        self.matrix = m
        if log is not None:
            self.log = log
        self._blocks(block_size(out_shape or []), block_size(in_shape or []))
        self.plot.setRange(xRange=(0, max(1, m.shape[1])), yRange=(0, max(1, m.shape[0])), padding=0.02)
        self._token += 1
        rows, cols = self.pixels()
        if m.size <= THREAD_ELEMENTS:
            self._take_pooled((self._token, *pool_max_abs(m, rows, cols)))
            return
        self.busy = True
        self.image.clear()
        self.zoom.setText("pooling…")
        token = self._token
        threading.Thread(
            target=lambda: self._pooled.emit((token, *pool_max_abs(m, rows, cols))),
            name="tfviz-heatmap-pool",
            daemon=True,
        ).start()

    def pixels(self) -> tuple[int, int]:
        """The plot's drawing area in device pixels (rows, cols): the pooling target."""
        r = self.plot.vb.sceneBoundingRect()
        ratio = self.devicePixelRatioF()
        return max(64, int(r.height() * ratio)), max(64, int(r.width() * ratio))

    def _take_pooled(self, got: tuple) -> None:
        token, pooled, blocks = got
        if token != self._token:
            return  # a newer matrix was set meanwhile
        self.busy = False
        self.shown, self.blocks = pooled, blocks
        self._draw()
        self.drawn.emit()

    def set_log(self, on: bool) -> None:
        if on != self.log:
            self.log = on
            self._draw()

    def clear(self) -> None:
        self._token += 1
        self.matrix = self.shown = np.zeros((0, 0), np.float32)
        self.zoom.setText("")
        self.image.clear()
        self.grid.setPath(QPainterPath())

    def _draw(self) -> None:
        m = self.shown
        if m.size == 0 or self.busy:
            self.image.clear()
            return
        if self.log:
            with np.errstate(divide="ignore", invalid="ignore"):
                shown = np.log10(np.abs(m))
            shown[~np.isfinite(shown)] = np.nan  # exact zeros (and NaN) blank
            top = float(np.nanmax(shown)) if np.isfinite(shown).any() else 0.0
            levels = (top - LOG_DECADES, top)
            lut, cmap, label = self._lut_seq, SEQUENTIAL, "log10 |J|"
        else:
            self.scale = max_abs(m)
            shown, levels = m, (-self.scale, self.scale)
            lut, cmap, label = self._lut_div, DIVERGING, "J"
        self.image.setImage(shown, autoLevels=False, levels=levels, lut=lut)
        by, bx = self.blocks
        # in element units: a block is drawn over its elements (the last ones may be shorter)
        self.image.setRect(QRectF(0, 0, self.matrix.shape[1], self.matrix.shape[0]))
        self.zoom.setText(zoom_text(by, bx))
        self.bar.setColorMap(cmap)
        self.bar.setLevels(levels)
        self.bar.axis.setLabel(label)

    def _blocks(self, rows_per: int, cols_per: int) -> None:
        rows, cols = self.matrix.shape
        path = QPainterPath()
        for r in range(rows_per, rows, rows_per) if rows_per else ():
            path.moveTo(QPointF(0, r))
            path.lineTo(QPointF(cols, r))
        for c in range(cols_per, cols, cols_per) if cols_per else ():
            path.moveTo(QPointF(c, 0))
            path.lineTo(QPointF(c, rows))
        self.grid.setPath(path)

    def set_labels(self, left: str, bottom: str) -> None:
        """The axes' titles. The rows' title runs up the plot's side, which a long tensor
        name and its slice overran (``…/Relu[0,:,:,0] (8, 24, 24, 16): 576 ou``): it is cut
        in the middle to the plot's height, whole in its tooltip."""
        self._left_title = left
        self.plot.setLabel("bottom", bottom)
        self._fit_left_title()

    def _fit_left_title(self) -> None:
        text = getattr(self, "_left_title", "")
        axis = self.plot.getAxis("left")
        room = int(self.plot.getViewBox().height()) - 6
        shown = text
        if text and room > 0:
            fm = QFontMetrics(axis.label.font())
            shown = next(
                (t for t in shorter_titles(text) if fm.horizontalAdvance(t) <= room),
                fm.elidedText(shorter_titles(text)[-1], Qt.TextElideMode.ElideMiddle, room),
            )
        self.plot.setLabel("left", shown)
        axis.setToolTip(text)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if hasattr(self, "plot"):  # not while the widget is being made
            self._fit_left_title()

    # -- hover --------------------------------------------------------------------
    def element_at(self, scene_pos) -> tuple[int, int] | None:
        """(row, col) of the element under a scene position, or None off the image."""
        p = self.plot.vb.mapSceneToView(scene_pos)
        r, c = int(np.floor(p.y())), int(np.floor(p.x()))
        rows, cols = self.matrix.shape
        return (r, c) if 0 <= r < rows and 0 <= c < cols else None

    def element_center(self, row: int, col: int) -> QPointF:
        """Where element (row, col) is drawn, in this widget's coordinates (for tests)."""
        sp = self.plot.vb.mapViewToScene(QPointF(col + 0.5, row + 0.5))
        return QPointF(self.mapFromScene(sp))

    def _mouse_moved(self, scene_pos) -> None:
        at = self.element_at(scene_pos)
        if at is None:
            self.hovered.emit(-1, -1, 0.0)
        else:
            self.hovered.emit(at[0], at[1], float(self.matrix[at]))

    def color_of(self, value: float) -> QColor:
        """The colour the linear map gives ``value`` (what a pixel of it shows)."""
        t = 0.5 + 0.5 * float(np.clip(value / self.scale, -1, 1))
        c = self._lut_div[min(LUT_SIZE - 1, int(t * (LUT_SIZE - 1) + 0.5))]
        return QColor(int(c[0]), int(c[1]), int(c[2]))
