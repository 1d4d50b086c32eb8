"""Jacobian files: ``.npy`` with the tensors' shapes, ``.csv`` and ``.png`` of the flattened
matrix. ``tfviz jacobian -o`` and the window's export both write through :func:`write`, so
their files are the same, signature and all."""

from __future__ import annotations

import os

import numpy as np

from tfviz.jacobian.data import Jacobian


def write(path: str, j: Jacobian, values: np.ndarray | None = None) -> None:
    """``.npy`` keeps the shape out_shape + in_shape; ``.csv`` and ``.png`` are
    the flattened (output elements x input elements) matrix. Replaces ``path`` only
    once complete; raises :class:`~tfviz.outputs.OutputError` (an OSError). ``values``:
    ``j``'s values when ``j`` does not carry them (the window's chain-rule product); the
    window's export writes through here, so its files are the command's, signature and all."""
    from tfviz.outputs import SIGNATURE, replacing
    from tfviz.version import __version__

    values = j.array() if values is None else values
    assert values is not None
    ext = os.path.splitext(path)[1].lower()
    if ext == ".npy":
        with replacing(path, binary=True) as fh:
            np.save(fh, values)  # a file object: np.save(path) would add ".npy" to a bare name
        return
    from tfviz.jacobian.slices import rows_cols

    matrix = values.reshape(rows_cols(j)[0], -1)
    if ext == ".csv":
        with replacing(path) as fh:  # the comment line is how tfviz knows the file again
            np.savetxt(fh, matrix, delimiter=",", fmt="%.9g", header=f"{SIGNATURE} {__version__}")
    else:
        from tfviz.jacobian.png import to_png
        from tfviz.jacobian.slices import describe

        of, wrt = getattr(j, "of", None), getattr(j, "wrt", None)
        title = f"J({getattr(of, 'name', 'out')}, {getattr(wrt, 'name', 'in')})"
        png = to_png(
            matrix,
            describe(of, getattr(j, "out_index", None), j.out_range),
            describe(wrt, getattr(j, "in_index", None), getattr(j, "in_range", None)),
            title,
        )
        with replacing(path, binary=True) as fh:
            fh.write(png)
