"""A Jacobian as an image file, without matplotlib or Qt.

A minimal PNG writer (zlib + struct) and a diverging blue-white-red colour
map centred on zero, scaled to the largest magnitude, so the sign of every
entry reads at a glance and zero is always white. Rows are output elements,
columns input elements (the flattened Jacobian).

>>> import numpy as np, zlib
>>> data = to_png(np.array([[-1.0, 0.0, 1.0]]))
>>> data[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from tfviz import __version__
from tfviz.outputs import SIGNATURE

#: Blue (negative), white (zero), red (positive): ColorBrewer RdBu ends.
_NEG = np.array([33, 102, 172], dtype=np.float64)
_MID = np.array([247, 247, 247], dtype=np.float64)
_POS = np.array([178, 24, 43], dtype=np.float64)


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


def to_png(matrix: np.ndarray, min_pixels: int = 256) -> bytes:
    """PNG bytes of the matrix; small matrices are scaled up by whole pixels."""
    m = np.atleast_2d(np.asarray(matrix))
    rgb = colorize(m)
    k = max(1, min_pixels // max(1, max(m.shape)))
    if k > 1:
        rgb = np.repeat(np.repeat(rgb, k, axis=0), k, axis=1)
    h, w = rgb.shape[:2]
    raw = b"".join(b"\x00" + rgb[r].tobytes() for r in range(h))

    def chunk(tag: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + tag + body + struct.pack(
            ">I", zlib.crc32(tag + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    software = f"Software\0{SIGNATURE} {__version__}".encode("latin-1")  # how tfviz knows its files
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"tEXt", software)
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))

