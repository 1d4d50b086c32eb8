"""Structured slices: per dimension of a tensor, one index, a range, or all of it.

Flat index ranges cannot say "batch element 0, all positions, channel 3" of a
(8, 26, 26, 16) conv output: those elements are not contiguous. A slice spec has
one entry per dimension, ``int`` (that index, the dimension is dropped, as numpy
drops it), ``None`` (all) or ``[start, stop]`` (a range, kept). On the command
line it is written like a numpy index without brackets: ``0,:,:,3``.

The selected elements are listed as flat (C-order) indices, so the Jacobian is
computed for exactly those rows (reverse mode differentiates only the selected
outputs) or columns, and its values have the kept dimensions' shape.

>>> spec = parse_spec("0,:,1:3", "--of-index")
>>> spec
[0, None, [1, 3]]
>>> sel = select(spec, [2, 3, 4], "--of-index", "y")
>>> sel.shape, sel.flat.tolist()
([3, 2], [1, 2, 5, 6, 9, 10])
>>> format_spec(spec)
'0,:,1:3'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tfviz.jacobian.data import JacobianError

#: One dimension's entry: an index, all (None), or [start, stop).
Entry = int | None | list[int]
Spec = list[Entry]


@dataclass
class Selection:
    """The elements a spec selects: ``flat`` indices in C order, ``shape`` of the kept dims."""

    spec: Spec | None
    shape: list[int]
    flat: np.ndarray

    @property
    def size(self) -> int:
        return int(self.flat.size)


def parse_spec(text: str, flag: str) -> Spec:
    """``"0,:,:,3"`` as a spec; ValueError with a one-line message otherwise."""
    out: Spec = []
    for k, part in enumerate(text.split(",")):
        p = part.strip()
        try:
            if p == ":":
                out.append(None)
            elif ":" in p:
                a, b = p.split(":")
                out.append([int(a), int(b)])
            else:
                out.append(int(p))
        except ValueError:
            raise ValueError(
                f"{flag} takes one entry per dimension, separated by commas: N (one index), ':' (all)"
                f" or A:B (a range), e.g. 0,:,:,3; entry {k} is {p!r} in {text!r}"
            ) from None
    return out


def format_spec(spec: Spec | None) -> str:
    """The command-line form of a spec (``:`` for all)."""
    if spec is None:
        return ""
    return ",".join(":" if e is None else f"{e[0]}:{e[1]}" if isinstance(e, list) else str(e) for e in spec)


def check_spec(spec: Any, key: str) -> Spec | None:
    """A request's spec, type-checked only (the shape check needs the tensor)."""
    if spec is None:
        return None
    ok = isinstance(spec, list) and all(
        e is None
        or (isinstance(e, int) and not isinstance(e, bool))
        or (
            isinstance(e, list)
            and len(e) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in e)
        )
        for e in spec
    )
    if not ok:
        raise JacobianError(
            "bad_request",
            f'"{key}" must be a list with one entry per dimension:'
            f" an index, null (all) or [start, stop], got {spec!r}",
        )
    return list(spec)


def kept_shape(spec: Spec | None, shape: list[int]) -> list[int]:
    """The shape of the selected elements (an index drops its dimension, as in numpy).

    >>> kept_shape([0, None, [2, 5]], [8, 26, 16]), kept_shape(None, [3, 4])
    ([26, 3], [3, 4])
    """
    if spec is None:
        return list(shape)
    return [n if e is None else e[1] - e[0] for e, n in zip(spec, shape) if not isinstance(e, int)]


def rows_cols(j: Any) -> tuple[int, int]:
    """The flattened (outputs x inputs) matrix's size of a result (flat ranges, then slices).
    Only ``out_range`` and ``of.size`` are needed of a result without slices."""

    def side(rng: list[int] | None, spec: Spec | None, ref: Any) -> int:
        if rng:
            return rng[1] - rng[0]
        if spec is None:
            return int(ref.size)
        return int(np.prod(kept_shape(spec, ref.shape), dtype=np.int64))

    rows = side(j.out_range, getattr(j, "out_index", None), j.of)
    wrt = getattr(j, "wrt", None)
    return rows, side(j.in_range, getattr(j, "in_index", None), wrt) if wrt is not None else -1


def describe(ref: Any, spec: Spec | None, rng: list[int] | None) -> str:
    """``y[0,:,:,3] (8, 24, 24, 16)``, with the flat range if any: a matrix axis's name."""
    name = getattr(ref, "name", "") or "?"
    shape = tuple(getattr(ref, "shape", ()) or ())
    text = f"{name}[{format_spec(spec)}] {shape}" if spec else f"{name} {shape}"
    return text + (f" elements {rng[0]}-{rng[1] - 1}" if rng else "")


def select(spec: Spec | None, shape: list[int], flag: str, name: str) -> Selection:
    """The flat indices ``spec`` selects in a tensor of ``shape``; a ``bad_request`` naming the
    dimension otherwise."""
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if spec is None:
        return Selection(None, list(shape), np.arange(size, dtype=np.int64))
    dims = "(" + ", ".join(map(str, shape)) + (",)" if len(shape) == 1 else ")")
    if len(spec) != len(shape):
        raise JacobianError(
            "bad_request",
            f"{flag} {format_spec(spec)!r} has {len(spec)}"
            f" entr{'y' if len(spec) == 1 else 'ies'} but '{name}' has {len(shape)}"
            f" dimension{'s' if len(shape) != 1 else ''} {dims}: give one per dimension",
        )
    axes: list[np.ndarray] = []
    kept: list[int] = []
    for d, (e, n) in enumerate(zip(spec, shape)):
        if e is None:
            axes.append(np.arange(n))
            kept.append(n)
        elif isinstance(e, list):
            if not 0 <= e[0] < e[1] <= n:
                raise JacobianError(
                    "bad_request",
                    f"{flag}: the range {e[0]}:{e[1]} of dimension {d}"
                    f" of '{name}' {dims} must satisfy 0 <= start < stop <= {n}",
                )
            axes.append(np.arange(e[0], e[1]))
            kept.append(e[1] - e[0])
        else:
            if not 0 <= e < n:
                raise JacobianError(
                    "bad_request",
                    f"{flag}: index {e} of dimension {d} of '{name}'"
                    f" {dims} is out of range: it must be 0 to {n - 1}",
                )
            axes.append(np.array([e]))
    if not axes:
        return Selection(list(spec), [], np.zeros(1, np.int64))
    grids = np.meshgrid(*axes, indexing="ij")
    flat = np.ravel_multi_index([g.ravel() for g in grids], shape).astype(np.int64)
    return Selection(list(spec), kept, flat)


def offers_for(
    of_shape: list[int],
    wrt_shape: list[int],
    of_spec: Spec | None,
    wrt_spec: Spec | None,
    itemsize: int,
    budget: int,
    limit: int = 4,
) -> list[dict[str, Any]]:
    """Structured slices that fit ``budget``: fix one more dimension of the output (index 0)
    or of the input, then two, nearest first. Cheap: only sizes are computed."""

    def size(shape: list[int], spec: Spec | None) -> int:
        spec = spec if spec is not None else [None] * len(shape)
        n = 1
        for e, s in zip(spec, shape):
            n *= s if e is None else (e[1] - e[0]) if isinstance(e, list) else 1
        return n

    base_o: Spec = of_spec if of_spec is not None else [None] * len(of_shape)
    base_i: Spec = wrt_spec if wrt_spec is not None else [None] * len(wrt_shape)
    free_o = [d for d, e in enumerate(base_o) if e is None and of_shape[d] > 1]
    free_i = [d for d, e in enumerate(base_i) if e is None and wrt_shape[d] > 1]
    tries: list[tuple[Spec, Spec]] = []
    for d in free_o:  # one output dimension (the batch first)
        tries.append(([0 if k == d else e for k, e in enumerate(base_o)], base_i))
    for d in reversed(free_i):  # one input dimension (a kernel's filter: the last)
        tries.append((base_o, [0 if k == d else e for k, e in enumerate(base_i)]))
    for d in free_o:  # an output dimension and an input dimension
        for d2 in reversed(free_i):
            tries.append(
                (
                    [0 if k == d else e for k, e in enumerate(base_o)],
                    [0 if k == d2 else e for k, e in enumerate(base_i)],
                )
            )
    offers: list[dict[str, Any]] = []
    for o, i in tries:
        nbytes = size(of_shape, o) * size(wrt_shape, i) * itemsize
        if nbytes <= budget and len(offers) < limit:
            offers.append(
                {
                    "of_index": o if any(e is not None for e in o) else None,
                    "wrt_index": i if any(e is not None for e in i) else None,
                    "bytes": nbytes,
                }
            )
    return offers
