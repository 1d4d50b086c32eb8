"""Plain-data Jacobian results that cross the worker's pipe as JSON.

Arrays travel as base64 of their raw little-endian bytes plus dtype and
shape: a 2000x2000 float32 Jacobian is 16 MB of bytes and about 21 MB of
base64, against roughly 40 MB as a nested JSON list that also takes seconds
to parse. ``encoding="list"`` gives nested lists for small results and
humans.

>>> import numpy as np
>>> a = Array.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
>>> Array.from_dict(a.to_dict()).to_numpy().tolist()
[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
>>> Array.from_dict(a.to_dict("list")).to_numpy().dtype.name
'float32'
"""

from __future__ import annotations

import base64
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

#: Base64 characters decoded at a time (a multiple of 4): a few milliseconds each.
DECODE_PIECE = 4 * 2**20
#: Result statuses: a matrix, or one of the two answers that are not a matrix.
STATUSES = ("ok", "no_path", "cut")


@dataclass
class Array:
    """A numpy array as JSON-able data (C order, little-endian)."""

    dtype: str
    shape: list[int]
    data: str | list[Any] = ""
    encoding: str = "base64"

    @classmethod
    def holding(cls, a: np.ndarray) -> Array:
        """An array computed where it is shown (a difference of two decoded ones): it is
        never sent, so it is not encoded; :meth:`to_numpy` gives ``a``."""
        out = cls(a.dtype.name, list(a.shape))
        out.__dict__["_decoded"] = a  # what the cached property below would have computed
        return out

    @classmethod
    def from_numpy(cls, a: np.ndarray, encoding: str = "base64") -> Array:
        a = np.ascontiguousarray(a)
        if encoding == "list":
            return cls(a.dtype.name, list(a.shape), a.tolist(), "list")
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        return cls(a.dtype.name, list(a.shape), base64.b64encode(raw).decode("ascii"))

    def to_numpy(self) -> np.ndarray:
        """The array, decoded once: the window decodes it on a thread and then draws, saves
        and compares it on its GUI thread. Read-only, as it is shared."""
        return self._decoded

    @functools.cached_property
    def _decoded(self) -> np.ndarray:
        a = self._decode()
        a.setflags(write=False)
        return a

    def _decode(self) -> np.ndarray:
        dtype = np.dtype(self.dtype)
        if self.encoding == "list":
            return np.asarray(self.data, dtype=dtype).reshape(self.shape)
        text = cast(str, self.data)  # base64: a string
        # in pieces: one b64decode of 500 MB holds the GIL for about a second, and the GUI
        # decodes on a thread beside its event loop
        step = DECODE_PIECE
        raw = b"".join(base64.b64decode(text[k : k + step]) for k in range(0, len(text), step))
        return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(self.shape)

    def to_dict(self, encoding: str | None = None) -> dict[str, Any]:
        held = not self.data and "_decoded" in self.__dict__  # made by holding(): encoded only now
        if held or (encoding and encoding != self.encoding):
            return Array.from_numpy(self.to_numpy(), encoding or self.encoding).to_dict()
        return {"dtype": self.dtype, "shape": self.shape, "data": self.data, "encoding": self.encoding}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Array:
        return cls(d["dtype"], list(d["shape"]), d.get("data", ""), d.get("encoding", "base64"))


@dataclass
class TensorRef:
    """A tensor of the analyzed graph, or a variable, as the user names it.

    ``node``/``index`` are the graph document's op id and output index (the
    GUI's node ids); ``kind`` is "target", "tensor" or "variable".
    """

    name: str
    kind: str
    node: str
    index: int = 0
    dtype: str = ""
    shape: list[int] = field(default_factory=list)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1


@dataclass
class Cut:
    """The op where a structural path stops carrying a gradient."""

    op: str
    op_type: str
    kind: str
    message: str
    file: str | None = None
    line: int | None = None


@dataclass
class Jacobian:
    """d of[i] / d wrt[j]. ``values`` has shape ``of.shape + wrt.shape``; with
    structured slices (``out_index`` / ``in_index``, :mod:`tfviz.jacobian.slices`)
    the kept dimensions of each; ``[n_out, n_in]`` when a flat range was given (a
    range counts within the structured slice's elements). ``None`` unless
    ``status == "ok"``."""

    of: TensorRef
    wrt: TensorRef
    status: str = "ok"
    message: str = ""
    values: Array | None = None
    mode: str = ""  # "reverse" or "forward"
    chunks: int = 0
    seconds: float = 0.0
    out_range: list[int] | None = None  # flat [start, stop) over of's elements
    in_range: list[int] | None = None  # flat [start, stop) over wrt's elements
    cut: Cut | None = None
    out_index: list[Any] | None = None  # per dimension of ``of``: index, None (all), [start, stop]
    in_index: list[Any] | None = None  # the same for ``wrt``

    def to_dict(self, encoding: str = "base64") -> dict[str, Any]:
        d = dataclasses.asdict(self)
        if self.values is not None:
            d["values"] = self.values.to_dict(encoding)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Jacobian:
        return cls(
            of=TensorRef(**d["of"]),
            wrt=TensorRef(**d["wrt"]),
            status=d.get("status", "ok"),
            message=d.get("message", ""),
            values=Array.from_dict(d["values"]) if d.get("values") else None,
            mode=d.get("mode", ""),
            chunks=d.get("chunks", 0),
            seconds=d.get("seconds", 0.0),
            out_range=d.get("out_range"),
            in_range=d.get("in_range"),
            cut=Cut(**d["cut"]) if d.get("cut") else None,
            out_index=d.get("out_index"),
            in_index=d.get("in_index"),
        )

    def array(self) -> np.ndarray | None:
        return self.values.to_numpy() if self.values is not None else None


@dataclass
class ChainSplit:
    """The seed-3 question: J(y,x) against J(y,h) @ J(h,x), and what
    ``tf.gradients(y, x)`` gives (J summed over y's elements: x's shape)."""

    j_yh: Jacobian
    j_hx: Jacobian
    j_yx: Jacobian
    product: Array | None = None  # shape y.shape + x.shape
    max_abs_diff: float | None = None  # max |product - J(y,x)|
    tf_gradients: Array | None = None  # tf.gradients(y, x)[0], shape x.shape
    tf_gradients_diff: float | None = None  # max |tf.gradients - sum_i J(y,x)[i]|
    message: str = ""

    def to_dict(self, encoding: str = "base64") -> dict[str, Any]:
        return {
            "j_yh": self.j_yh.to_dict(encoding),
            "j_hx": self.j_hx.to_dict(encoding),
            "j_yx": self.j_yx.to_dict(encoding),
            "product": self.product.to_dict(encoding) if self.product else None,
            "max_abs_diff": self.max_abs_diff,
            "tf_gradients": self.tf_gradients.to_dict(encoding) if self.tf_gradients else None,
            "tf_gradients_diff": self.tf_gradients_diff,
            "message": self.message,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChainSplit:
        arr: Callable[[Any], Array | None] = lambda v: Array.from_dict(v) if v else None
        return cls(
            Jacobian.from_dict(d["j_yh"]),
            Jacobian.from_dict(d["j_hx"]),
            Jacobian.from_dict(d["j_yx"]),
            arr(d.get("product")),
            d.get("max_abs_diff"),
            arr(d.get("tf_gradients")),
            d.get("tf_gradients_diff"),
            d.get("message", ""),
        )


class JacobianError(Exception):
    """A request that cannot be answered with a matrix, as data.

    ``kind``: ``not_found`` (with close-match ``candidates``), ``not_reachable``
    (inside a nested function body), ``too_big`` (with ``size_bytes``,
    ``budget_bytes`` and slice ``offers``), ``cancelled``, ``replay`` (the
    step could not be traced again), ``unsupported``, ``bad_request``.
    """

    def __init__(self, kind: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.kind, self.message, self.extra = kind, message, extra

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, **self.extra}


def fmt_bytes(n: int) -> str:
    """>>> fmt_bytes(16_000_000), fmt_bytes(3 * 2**30)
    ('15.3 MiB', '3.0 GiB')
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


#: A base64 string longer than this travels in ``jacobian_piece`` messages ahead of its
#: answer: ``json.loads`` of one 150 MB line holds the GIL for 0.6 s, and the window's event
#: loop with it, while a 4 MiB piece takes a few milliseconds.
PIECE = 4 * 2**20


def split_pieces(msg: dict[str, Any], size: int = PIECE) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``msg`` with each long base64 ``data`` emptied (and ``pieces`` saying into how many it
    was cut), and the ``jacobian_piece`` messages to send before it.

    >>> pieces, out = split_pieces({"type": "jacobian", "id": 7,
    ...                             "result": {"values": {"encoding": "base64", "data": "abcdefg"}}}, 3)
    >>> [p["data"] for p in pieces], out["result"]["values"], pieces[0]["path"]
    (['abc', 'def', 'g'], {'encoding': 'base64', 'data': '', 'pieces': 3}, ['result', 'values'])
    >>> join_pieces(out, pieces)["result"]["values"]
    {'encoding': 'base64', 'data': 'abcdefg'}
    """
    pieces: list[dict[str, Any]] = []

    def walk(v: Any, path: list[str]) -> Any:
        if not isinstance(v, dict):
            return v
        data = v.get("data")
        if v.get("encoding") == "base64" and isinstance(data, str) and len(data) > size:
            n = -(-len(data) // size)
            pieces.extend(
                {
                    "type": "jacobian_piece",
                    "id": msg.get("id"),
                    "path": path,
                    "index": k,
                    "data": data[k * size : (k + 1) * size],
                }
                for k in range(n)
            )
            return {**v, "data": "", "pieces": n}
        return {key: walk(x, [*path, key]) for key, x in v.items()}

    out: dict[str, Any] = walk(msg, [])
    return pieces, out


def join_pieces(msg: dict[str, Any], pieces: list[dict[str, Any]]) -> dict[str, Any]:
    """``msg`` with the ``data`` that :func:`split_pieces` cut out put back (in place). A piece
    missing is a bad answer: ValueError, never a silently short matrix."""
    by_path: dict[tuple[str, ...], dict[int, str]] = {}
    for p in pieces:
        by_path.setdefault(tuple(p.get("path") or ()), {})[int(p.get("index", 0))] = str(p.get("data", ""))
    for path, parts in by_path.items():
        node: Any = msg
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict) or sorted(parts) != list(range(node.get("pieces", -1))):
            raise ValueError(f"the answer's {'/'.join(path) or 'data'} arrived incomplete")
        node["data"] = "".join(parts[k] for k in range(len(parts)))
        del node["pieces"]
    return msg
