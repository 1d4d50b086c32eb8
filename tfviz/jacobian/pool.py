"""Shrink a Jacobian to the pixels available without losing its sparse structure.

A conv layer's Jacobian is mostly zeros with a few nonzeros per row. Averaging a
block of 52 x 3 elements into one pixel divides those few by 156 (they fade to
white), and striding skips them altogether: both make a structured matrix look
blank. Each pixel here shows the element of largest |J| in its block, with its
sign, so every nonzero element that exists shows as a coloured pixel and a
block is white only when every element in it is zero. A NaN in a block wins
(it shows, as NaN, rather than hiding).

``np.maximum.reduceat`` handles uneven last blocks without padding (no copy of
the matrix) and its loops run without the GIL, so a background thread pooling
a 500 MB matrix leaves the GUI's event loop free.
"""

from __future__ import annotations

import numpy as np


def block(n: int, pixels: int) -> int:
    """Elements per pixel along an axis of ``n`` elements shown on ``pixels`` pixels.

    >>> block(83886, 600), block(400, 600)
    (140, 1)
    """
    return max(1, -(-n // max(1, pixels)))


def pool_max_abs(m: np.ndarray, max_rows: int, max_cols: int) -> tuple[np.ndarray, tuple[int, int]]:
    """``m`` pooled to at most ``max_rows`` x ``max_cols`` by max |J| per block (sign kept),
    and the block size ``(rows, cols)``; ``m`` itself when it already fits."""
    rows, cols = m.shape
    by, bx = block(rows, max_rows), block(cols, max_cols)
    if by == 1 and bx == 1:
        return m, (1, 1)
    hi, lo = m, m
    if by > 1:
        starts = np.arange(0, rows, by)
        hi, lo = np.maximum.reduceat(m, starts, axis=0), np.minimum.reduceat(m, starts, axis=0)
    if bx > 1:
        starts = np.arange(0, cols, bx)
        hi, lo = np.maximum.reduceat(hi, starts, axis=1), np.minimum.reduceat(lo, starts, axis=1)
    pooled: np.ndarray = np.where(hi >= -lo, hi, lo)  # the larger magnitude, with its sign
    nan = np.isnan(hi) | np.isnan(lo)
    if nan.any():
        pooled[nan] = np.nan
    return pooled, (by, bx)


def zoom_text(by: int, bx: int) -> str:
    """What one pixel shows, for the panel and the PNG.

    >>> zoom_text(52, 3), zoom_text(1, 1)
    ('1 px = 52 × 3 elements, max |J|', '1 px = 1 element')
    """
    if by == 1 and bx == 1:
        return "1 px = 1 element"
    return f"1 px = {by} × {bx} elements, max |J|"
