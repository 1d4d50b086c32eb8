"""Save the Jacobian the panel shows, as ``tfviz jacobian -o`` does.

``.npy`` keeps the shape ``of.shape + wrt.shape`` (the kept dimensions of a
structured slice, ``[n_out, n_in]`` for a flat range); ``.csv`` and ``.png`` are
the flattened (outputs x inputs) matrix, the PNG a figure in the CLI's
blue-white-red map (zero white) with index ticks, both tensors' names and a
colour bar (:mod:`tfviz.jacobian.png`). The files are the command's own: one
writer (:func:`tfviz.jacobian.files.write`). The panel calls :func:`save` on a thread.
"""

from __future__ import annotations

import os
from typing import cast

import numpy as np

from tfviz.jacobian.data import Jacobian
from tfviz.jacobian.files import write
from tfviz.jacobian.slices import rows_cols

FORMATS = {".npy": "NumPy array (*.npy)", ".csv": "CSV matrix (*.csv)", ".png": "PNG image (*.png)"}


def values_of(j: Jacobian) -> np.ndarray:
    # an answered Jacobian (status "ok", the only kind shown or saved) has its values
    return cast(np.ndarray, j.array())


def matrix_of(j: Jacobian) -> np.ndarray:
    """(output elements, input elements)."""
    return values_of(j).reshape(rows_cols(j))


def save(j: Jacobian, path: str) -> str:
    """Write ``j`` to ``path`` in the format its extension names; returns the path.
    Written as ``tfviz jacobian -o`` writes it (:func:`tfviz.jacobian.files.write`): replaced
    only once complete, the CSV and PNG signed so that the command may replace them later.
    Raises ValueError for another extension, :class:`~tfviz.outputs.OutputError` (an
    OSError) when the file cannot be written."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise ValueError(f"unknown format {ext or '(none)'}: use .npy, .csv or .png")
    write(path, j, values_of(j))
    return path


def default_name(j: Jacobian, ext: str = ".npy") -> str:
    safe = lambda s: "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in s)
    return f"jacobian_{safe(j.of.name)}_wrt_{safe(j.wrt.name)}{ext}"
