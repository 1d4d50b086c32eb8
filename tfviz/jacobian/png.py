"""A Jacobian as an image file, without matplotlib or Qt.

A minimal PNG writer (zlib + struct), a diverging blue-white-red colour map
centred on zero (scaled to the largest magnitude, so the sign of every entry
reads at a glance and zero is always white) and a small bitmap font, so the
file is a figure that reads on its own: the matrix (rows: output elements,
columns: input elements of the flattened Jacobian) with index ticks on both
axes, the two tensors' names and shapes, and a colour bar with its scale.

A matrix larger than :data:`MAX_PIXELS` along a side is pooled by max |J| per
block (:mod:`tfviz.jacobian.pool`), so the sparse structure of a conv layer's
Jacobian survives; the title says how many elements one pixel shows. Small
matrices are scaled up by whole pixels. The matrix's pixel rectangle is kept
in a ``tfviz:matrix`` text chunk (x,y,w,h), for tools and tests.

>>> import numpy as np
>>> data = to_png(np.array([[-1.0, 0.0, 1.0]]))
>>> data[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from tfviz.jacobian.pool import pool_max_abs, zoom_text
from tfviz.outputs import SIGNATURE
from tfviz.version import __version__

#: Blue (negative), white (zero), red (positive): ColorBrewer RdBu ends.
_NEG = np.array([33, 102, 172], dtype=np.float64)
_MID = np.array([247, 247, 247], dtype=np.float64)
_POS = np.array([178, 24, 43], dtype=np.float64)
#: The longest side of the matrix in the file, in pixels, before pooling.
MAX_PIXELS = 1200
#: Font pixels per bitmap pixel, and the ink.
TEXT_SCALE = 2
_INK = np.array([40, 40, 40], np.uint8)
_AXIS = np.array([96, 96, 96], np.uint8)

# The classic 5x7 LCD font (ASCII 32-126): five columns per glyph, bit 0 the top row.
_FONT_HEX = (
    "0000000000 00005f0000 0007000700 147f147f14 242a7f2a12 2313086462 3649562050 0008070300 "
    "001c224100 0041221c00 2a1c7f1c2a 08083e0808 0080703000 0808080808 0000606000 2010080402 "
    "3e5149453e 00427f4000 7249494946 2141494d33 1814127f10 2745454539 3c4a494931 4121110907 "
    "3649494936 464949291e 0000140000 0040340000 0008142241 1414141414 0041221408 0201590906 "
    "3e415d594e 7c1211127c 7f49494936 3e41414122 7f4141413e 7f49494941 7f09090901 3e41415173 "
    "7f0808087f 00417f4100 2040413f01 7f08142241 7f40404040 7f021c027f 7f0408107f 3e4141413e "
    "7f09090906 3e4151215e 7f09192946 2649494932 03017f0103 3f4040403f 1f2040201f 3f4038403f "
    "6314081463 0304780403 6159494d43 007f414141 0204081020 004141417f 0402010204 4040404040 "
    "0003070800 2054547840 7f28444438 3844444428 384444287f 3854545418 00087e0902 18a4a49c78 "
    "7f08040478 00447d4000 2040403d00 7f10284400 00417f4000 7c04780478 7c08040478 3844444438 "
    "fc18242418 18242418fc 7c08040408 4854545424 04043f4424 3c4040207c 1c2040201c 3c4030403c "
    "4428102844 4c9090907c 4464544c44 0008364100 0000770000 0041360800 0201020402 "
)
_GLYPHS = np.array(
    [[[(b >> r) & 1 for b in bytes.fromhex(g)] for r in range(8)] for g in _FONT_HEX.split()], dtype=bool
)  # (95, 8, 5)


def colorize(matrix: np.ndarray) -> np.ndarray:
    """(rows, cols) floats -> (rows, cols, 3) uint8, zero white; NaN/Inf black."""
    m = np.asarray(matrix, dtype=np.float64)
    finite = np.isfinite(m)
    scale = float(np.max(np.abs(m[finite]))) if finite.any() else 0.0
    t = np.clip(np.where(finite, m, 0.0) / scale, -1.0, 1.0) if scale > 0 else np.zeros_like(m)
    a = np.abs(t)[..., None]
    end = np.where((t < 0)[..., None], _NEG, _POS)
    rgb = _MID * (1 - a) + end * a
    rgb[~finite] = 0
    out: np.ndarray = np.round(rgb).astype(np.uint8)
    return out


def text_mask(text: str, scale: int = TEXT_SCALE) -> np.ndarray:
    """The ink of ``text`` in the bitmap font: (8*scale, 6*scale*len) booleans. Characters
    outside ASCII become their nearest ASCII (× -> x, – -> -) or '?'."""
    text = text.replace("×", "x").replace("–", "-").replace("−", "-").replace("…", "...")
    codes = [ord(c) - 32 if 32 <= ord(c) < 127 else ord("?") - 32 for c in text]
    if not codes:
        return np.zeros((8 * scale, 0), bool)
    cells = np.zeros((len(codes), 8, 6), bool)
    cells[:, :, :5] = _GLYPHS[codes]
    row = cells.transpose(1, 0, 2).reshape(8, -1)
    return np.repeat(np.repeat(row, scale, axis=0), scale, axis=1)


def _blit(rgb: np.ndarray, mask: np.ndarray, x: int, y: int, color: np.ndarray = _INK) -> None:
    h, w = mask.shape
    x0, y0 = max(0, x), max(0, y)
    x1, y1 = min(rgb.shape[1], x + w), min(rgb.shape[0], y + h)
    if x1 > x0 and y1 > y0:
        rgb[y0:y1, x0:x1][mask[y0 - y : y1 - y, x0 - x : x1 - x]] = color


def _fit(text: str, width: int) -> str:
    """``text`` cut with '...' to at most ``width`` pixels."""
    n = max(1, width // (6 * TEXT_SCALE))
    return text if len(text) <= n else text[: max(0, n - 3)] + "..."


def ticks(n: int, pixels: float, min_gap: float = 70.0) -> list[int]:
    """Element indices to label along an axis of ``n`` elements drawn on ``pixels`` pixels:
    steps of 1, 2 or 5 x 10^k, at least ``min_gap`` pixels apart.

    >>> ticks(12, 252), ticks(83886, 1000)[:3]
    ([0, 5, 10], [0, 10000, 20000])
    """
    if n <= 0:
        return []
    want = max(1.0, n * min_gap / max(pixels, 1.0))
    base = 1
    while True:
        for f in (1, 2, 5):
            if base * f >= want:
                return list(range(0, n, base * f))
        base *= 10


def figure(
    matrix: np.ndarray, of_label: str = "", wrt_label: str = "", title: str = "", min_pixels: int = 256
) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """The figure as (height, width, 3) uint8 and the matrix's rectangle (x, y, w, h)."""
    m = np.atleast_2d(np.asarray(matrix, dtype=np.float64))
    rows, cols = m.shape
    pooled, (by, bx) = pool_max_abs(m, MAX_PIXELS, MAX_PIXELS)
    img = colorize(pooled)
    k = max(1, min_pixels // max(1, max(img.shape[:2])))
    if k > 1:
        img = np.repeat(np.repeat(img, k, axis=0), k, axis=1)
    h, w = img.shape[:2]
    ch = 8 * TEXT_SCALE  # a text line's height
    cw = 6 * TEXT_SCALE  # a character's advance
    finite = m[np.isfinite(m)]
    top_val = float(np.max(np.abs(finite))) if finite.size else 0.0
    bar_labels = [f"{top_val:+.3g}", "0", f"{-top_val:+.3g}"]
    row_ticks = ticks(rows, h * 1.0, 3.0 * ch)
    col_ticks = ticks(cols, w * 1.0, cw * (len(str(cols)) + 2))
    rows_text = f"rows: {of_label or 'output'}"
    cols_text = f"columns: {wrt_label or 'input'}"
    upright = cw * len(rows_text) <= max(h, 3 * ch)  # along the rows, else a header line
    header = [title or "Jacobian", zoom_text(by, bx) if (by, bx) != (1, 1) else f"{rows} x {cols} elements"]
    header += [] if upright else [rows_text]
    left = 8 + (ch + 8 if upright else 0) + cw * max(len(str(t)) for t in row_ticks or [0]) + 8
    top = 8 + len(header) * (ch + 6) + 4
    bar_x = left + w + 20
    right = 20 + 20 + 8 + cw * max(len(s) for s in bar_labels) + 10
    bottom = 6 + ch + 8 + ch + 10
    width = max(left + w + right, 16 + cw * max(len(t) for t in header), left + 8 + cw * len(cols_text))
    width = min(width, max(left + w + right, 2000))  # very long names are cut, not the figure widened
    height = max(top + h + bottom, top + 3 * ch + bottom)
    rgb = np.full((height, width, 3), 255, np.uint8)
    x, y = left, top
    rgb[y : y + h, x : x + w] = img
    # frame and axis ticks
    rgb[y - 1, x - 1 : x + w + 1] = _AXIS
    rgb[y + h, x - 1 : x + w + 1] = _AXIS
    rgb[y - 1 : y + h + 1, x - 1] = _AXIS
    rgb[y - 1 : y + h + 1, x + w] = _AXIS
    for t in row_ticks:
        py = y + int((t + 0.5) * h / rows)
        rgb[py, x - 5 : x - 1] = _AXIS
        label = text_mask(str(t))
        _blit(rgb, label, x - 7 - label.shape[1], py - ch // 2)
    for t in col_ticks:
        px = x + int((t + 0.5) * w / cols)
        rgb[y + h + 1 : y + h + 5, px] = _AXIS
        label = text_mask(str(t))
        _blit(rgb, label, px - label.shape[1] // 2, y + h + 6)
    # the names: title and zoom on top, the output (rows) along the left, the input below
    for k, line in enumerate(header):
        _blit(rgb, text_mask(_fit(line, width - 16)), 8, 8 + k * (ch + 6), _AXIS if k == 1 else _INK)
    if upright:
        rows_label = np.rot90(text_mask(rows_text))
        _blit(rgb, rows_label, 8, y + max(0, (h - rows_label.shape[0]) // 2))
    cols_label = text_mask(_fit(cols_text, width - x - 8))
    _blit(
        rgb,
        cols_label,
        x + max(0, (w - cols_label.shape[1]) // 2) if cols_label.shape[1] < w else x,
        y + h + 6 + ch + 8,
    )
    # the colour bar: +max at the top (red), 0 (white) in the middle, -max at the bottom (blue)
    bar_h = max(h, 3 * ch)
    ramp = colorize(np.linspace(1.0, -1.0, bar_h)[:, None])
    rgb[y : y + bar_h, bar_x : bar_x + 20] = ramp
    rgb[y - 1, bar_x - 1 : bar_x + 21] = _AXIS
    rgb[y + bar_h, bar_x - 1 : bar_x + 21] = _AXIS
    rgb[y - 1 : y + bar_h + 1, bar_x - 1] = _AXIS
    rgb[y - 1 : y + bar_h + 1, bar_x + 20] = _AXIS
    for s, py in zip(bar_labels, (y, y + bar_h // 2, y + bar_h - 1)):
        rgb[py, bar_x + 21 : bar_x + 25] = _AXIS
        _blit(rgb, text_mask(s), bar_x + 28, min(max(y, py - ch // 2), y + bar_h - ch))
    return rgb, (x, y, w, h)


def to_png(
    matrix: np.ndarray, of_label: str = "", wrt_label: str = "", title: str = "", min_pixels: int = 256
) -> bytes:
    """PNG bytes of :func:`figure`."""
    rgb, box = figure(matrix, of_label, wrt_label, title, min_pixels)
    h, w = rgb.shape[:2]
    raw = np.zeros((h, 1 + 3 * w), np.uint8)  # filter byte 0 (none) before each row
    raw[:, 1:] = rgb.reshape(h, -1)

    def chunk(tag: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    software = f"Software\0{SIGNATURE} {__version__}".encode("latin-1")  # how tfviz knows its files
    where = ("tfviz:matrix\0" + ",".join(map(str, box))).encode("latin-1")
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"tEXt", software)
        + chunk(b"tEXt", where)
        + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
        + chunk(b"IEND", b"")
    )
