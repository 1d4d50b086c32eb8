"""A PNG encoder for big, mostly white pictures, several times faster than Qt's.

Qt's PNG handler (libpng) tries every row filter on every row and compresses on one
thread: 1.6 s for a 60-megapixel graph, 8x longer than drawing it. A drawn graph is
white space, flat fills and antialiased lines; with no row filter, zlib's fastest level
finds the same runs, so here the image is cut into horizontal bands, each band deflated on
its own thread (zlib releases the GIL) into one continuous zlib stream: every band but
the last ends on a byte boundary (``Z_SYNC_FLUSH``), and the stream's Adler-32 checksum
is combined from the bands'. Any PNG reader sees one ordinary 8-bit RGB image.

Pure numpy and zlib, no Qt: the caller hands over the pixels in memory order.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: zlib level: 1 is 2x faster than the default 6, files about a third larger
LEVEL = 1
#: raw bytes per band (and per IDAT chunk, about): small enough to keep memory flat
BAND_BYTES = 4 << 20
_ADLER_BASE = 65521


def adler32_combine(a1: int, a2: int, len2: int) -> int:
    """The Adler-32 of ``A + B`` from that of ``A`` (``a1``), of ``B`` (``a2``) and B's
    length, as zlib's ``adler32_combine`` (which Python's zlib does not expose)."""
    rem = len2 % _ADLER_BASE
    s1 = a1 & 0xFFFF
    s2 = (rem * s1) % _ADLER_BASE
    s1 = (s1 + (a2 & 0xFFFF) + _ADLER_BASE - 1) % _ADLER_BASE
    s2 = (s2 + (a1 >> 16) + (a2 >> 16) + _ADLER_BASE - rem) % _ADLER_BASE
    return s1 | (s2 << 16)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def _text(key: str, value: str) -> bytes:
    """A tEXt chunk when ``value`` is Latin-1, else an iTXt chunk (UTF-8)."""
    k = key.encode("latin-1")[:79]
    try:
        return _chunk(b"tEXt", k + b"\0" + value.encode("latin-1"))
    except UnicodeEncodeError:
        return _chunk(b"iTXt", k + b"\0\0\0\0\0" + value.encode("utf-8"))


def threads() -> int:
    """The CPUs this process may use, at most 8."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


def _rgb_rows(pixels: np.ndarray, order: tuple[int, int, int]) -> np.ndarray:
    """``pixels`` (rows, width, channels) as PNG scanlines: a filter byte (0, none), then
    R, G, B, from the channels at ``order``."""
    n, w = pixels.shape[:2]
    raw = np.empty((n, 1 + 3 * w), np.uint8)
    raw[:, 0] = 0
    rgb = raw[:, 1:].reshape(n, w, 3)
    for i, c in enumerate(order):  # plane by plane: 3x faster than a fancy-index gather
        rgb[:, :, i] = pixels[:, :, c]
    return raw


def idat(pixels: np.ndarray, order: tuple[int, int, int], level: int = LEVEL,
         workers: int | None = None) -> Iterable[bytes]:
    """The image data as one zlib stream, in pieces (one per band), deflated in parallel."""
    h, w = pixels.shape[:2]
    rows = max(1, BAND_BYTES // (3 * w + 1))
    bands = [(y, min(y + rows, h)) for y in range(0, h, rows)]

    def deflate(i: int) -> tuple[bytes, int, int]:
        y0, y1 = bands[i]
        raw = _rgb_rows(pixels[y0:y1], order)
        z = zlib.compressobj(level, zlib.DEFLATED, -15)  # raw deflate: one header for all
        last = i == len(bands) - 1
        data = z.compress(raw) + z.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)
        return data, zlib.adler32(raw), raw.size

    yield b"\x78\x01"  # zlib header: deflate, 32K window
    adler = 1
    with ThreadPoolExecutor(workers or threads()) as pool:
        for data, a, n in pool.map(deflate, range(len(bands))):
            adler = adler32_combine(adler, a, n)
            yield data
    yield struct.pack(">I", adler)


def write_png(out, pixels: np.ndarray, order: tuple[int, int, int] = (0, 1, 2), *,
              dots_per_meter: int = 0, text: dict[str, str] | None = None,
              level: int = LEVEL, workers: int | None = None) -> None:
    """Write ``pixels`` (height, width, channels of uint8; any strides) to the binary file
    ``out`` as an 8-bit RGB PNG, taking R, G, B from the channels at ``order`` (``(2, 1,
    0)`` for a little-endian QImage.Format_RGB32, whose bytes are B, G, R, X)."""
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or not pixels.shape[0] * pixels.shape[1]:
        raise ValueError(f"expected a non-empty (height, width, channels) uint8 array, not {pixels.dtype}"
                         f" {pixels.shape}")
    h, w = pixels.shape[:2]
    out.write(SIGNATURE)
    out.write(_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)))
    if dots_per_meter > 0:
        out.write(_chunk(b"pHYs", struct.pack(">IIB", dots_per_meter, dots_per_meter, 1)))
    for k, v in (text or {}).items():
        out.write(_text(k, v))
    pending = b""
    for piece in idat(pixels, order, level, workers):
        pending += piece
        if len(pending) >= 1 << 20:
            out.write(_chunk(b"IDAT", pending))
            pending = b""
    out.write(_chunk(b"IDAT", pending))
    out.write(_chunk(b"IEND", b""))
