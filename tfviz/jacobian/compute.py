"""Compute one Jacobian: mode, chunks, memory guard, "no path" and cuts.

Why it is built this way:

- Gradients are taken in the graph of a fresh trace of the step
  (:mod:`tfviz.jacobian.retrace`) with ``tf.gradients``, which can
  differentiate to *any* tensor of that graph, not only to what a tape
  watched before the tensor was made.
- Rows (reverse mode) or columns (forward mode) are vectorised with pfor,
  as ``tape.jacobian`` does, and computed in chunks so that progress is
  reported and a cancel is honoured between chunks. One concrete function
  serves every chunk (the start row is its argument), so a chunk costs a
  run, not a trace.
- Reverse mode costs one backward pass per output element, forward mode one
  forward pass per input element: reverse is used when the output is the
  smaller side. Forward mode is the transpose of the vector-Jacobian
  product, J u = d/dv <J^T v, u>, which is exactly how
  ``tf.autodiff.ForwardAccumulator`` computes each op's JVP; the
  accumulator itself cannot be used because it only follows ops created
  after ``watch()``, and the tensors here already exist when they are
  picked. Where an op's gradient has no gradient itself, forward mode falls
  back to reverse mode.
- Structured slices (:mod:`tfviz.jacobian.slices`: per dimension one index,
  a range or all) list the selected elements' flat indices; a row (column)
  is computed only for a selected output (input), so one batch element of a
  conv layer costs one batch element's rows. Flat ranges count within them.
- The result is refused above a byte budget (of the sliced size); the
  refusal gives the size and slices that fit, structured ones first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from tfviz.engine.graphbuild import OpGraph
from tfviz.jacobian.data import Array, Cut, Jacobian, JacobianError, TensorRef, fmt_bytes
from tfviz.jacobian.names import Resolved, refuse_nested
from tfviz.jacobian.retrace import Picker, trace_step
from tfviz.jacobian.slices import Selection, Spec, format_spec, offers_for, select

DEFAULT_BUDGET = 512 * 2**20
#: Bytes of result per chunk: small enough for progress, large enough for pfor.
CHUNK_BYTES = 64 * 2**20

Progress = Callable[[int, int], None]


class _NoGradient(Exception):
    """tf.gradients returned None although a path exists: the path is cut."""


@dataclass
class Plan:
    of: Resolved
    wrt: Resolved
    mode: str  # "reverse" | "forward"
    out_range: tuple[int, int]  # within the selected outputs
    in_range: tuple[int, int]  # within the selected inputs
    itemsize: int
    dtype: str
    out_sel: Selection | None = None  # None: every element
    in_sel: Selection | None = None

    def __post_init__(self) -> None:
        self.out_sel = self.out_sel or select(None, self.of.ref.shape, "", "")
        self.in_sel = self.in_sel or select(None, self.wrt.ref.shape, "", "")
        #: flat indices into the tensors of the rows and columns computed
        self.out_flat = self.out_sel.flat[self.out_range[0] : self.out_range[1]]
        self.in_flat = self.in_sel.flat[self.in_range[0] : self.in_range[1]]

    @property
    def n_out(self) -> int:
        return self.out_range[1] - self.out_range[0]

    @property
    def n_in(self) -> int:
        return self.in_range[1] - self.in_range[0]

    @property
    def ranged(self) -> bool:
        """A flat range narrows a side: the values are a plain [n_out, n_in] matrix."""
        assert self.out_sel is not None and self.in_sel is not None  # set in __post_init__
        return self.out_range != (0, self.out_sel.size) or self.in_range != (0, self.in_sel.size)

    @property
    def nbytes(self) -> int:
        return self.n_out * self.n_in * self.itemsize

    def chunk(self) -> int:
        """Rows (reverse) or columns (forward) per chunk."""
        across = self.n_in if self.mode == "reverse" else self.n_out
        along = self.n_out if self.mode == "reverse" else self.n_in
        return max(1, min(along, CHUNK_BYTES // max(1, across * self.itemsize)))


def check_range(r: list[int] | None, size: int, what: str) -> tuple[int, int]:
    """A flat [start, stop) range within ``size`` elements (None: all).

    >>> check_range(None, 6, "out"), check_range([2, 4], 6, "out")
    ((0, 6), (2, 4))
    """
    if r is None:
        return 0, size
    if (
        not isinstance(r, (list, tuple))
        or len(r) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in r)
        or not 0 <= r[0] < r[1] <= size
    ):
        raise JacobianError(
            "bad_request", f"{what}_range must be [start, stop) with 0 <= start < stop <= {size}, got {r!r}"
        )
    return int(r[0]), int(r[1])


def guard(plan: Plan, budget: int) -> None:
    """Refuse a result above ``budget`` bytes, offering slices that fit."""
    if plan.nbytes <= budget:
        return
    assert plan.out_sel is not None and plan.in_sel is not None  # set in __post_init__
    offers: list[dict[str, Any]] = []
    if not plan.ranged:
        offers += offers_for(
            plan.of.ref.shape, plan.wrt.ref.shape, plan.out_sel.spec, plan.in_sel.spec, plan.itemsize, budget
        )
    o_spec, i_spec = plan.out_sel.spec, plan.in_sel.spec
    rows = budget // max(1, plan.n_in * plan.itemsize)
    cols = budget // max(1, plan.n_out * plan.itemsize)
    o0, i0 = plan.out_range[0], plan.in_range[0]
    ranges: list[dict[str, Any]] = []
    if rows >= 1:
        ranges.append(
            {
                "out_range": [o0, o0 + rows],
                "in_range": list(plan.in_range),
                "bytes": rows * plan.n_in * plan.itemsize,
            }
        )
    if cols >= 1:
        ranges.append(
            {
                "out_range": list(plan.out_range),
                "in_range": [i0, i0 + cols],
                "bytes": cols * plan.n_out * plan.itemsize,
            }
        )
    if not ranges:
        side = max(1, int((budget // plan.itemsize) ** 0.5))
        ranges.append(
            {
                "out_range": [o0, o0 + min(side, plan.n_out)],
                "in_range": [i0, i0 + min(side, plan.n_in)],
                "bytes": min(side, plan.n_out) * min(side, plan.n_in) * plan.itemsize,
            }
        )
    offers += [dict(r, of_index=o_spec, wrt_index=i_spec) for r in ranges]
    what = (
        f"'{plan.of.ref.name}'"
        + (f"[{format_spec(o_spec)}]" if o_spec else "")
        + f" {tuple(plan.of.ref.shape)} w.r.t. '{plan.wrt.ref.name}'"
        + (f"[{format_spec(i_spec)}]" if i_spec else "")
        + f" {tuple(plan.wrt.ref.shape)}"
    )
    raise JacobianError(
        "too_big",
        f"the Jacobian of {what} would take {fmt_bytes(plan.nbytes)}"
        f" ({plan.n_out} x {plan.n_in} {plan.dtype}), above the budget of {fmt_bytes(budget)};"
        " ask for a slice of the output and/or input (one index or all per dimension, or flat"
        " index ranges) instead",
        size_bytes=plan.nbytes,
        budget_bytes=budget,
        offers=offers,
        of_shape=list(plan.of.ref.shape),
        wrt_shape=list(plan.wrt.ref.shape),
    )


def make_plan(
    of: Resolved,
    wrt: Resolved,
    out_range: list[int] | None,
    in_range: list[int] | None,
    mode: str = "auto",
    of_index: Spec | None = None,
    wrt_index: Spec | None = None,
) -> Plan:
    if mode not in ("auto", "reverse", "forward"):
        raise JacobianError("bad_request", f'mode must be "auto", "reverse" or "forward", got {mode!r}')
    out_sel = select(of_index, of.ref.shape, "of_index (--of-index)", of.ref.name)
    in_sel = select(wrt_index, wrt.ref.shape, "wrt_index (--wrt-index)", wrt.ref.name)
    o = check_range(out_range, out_sel.size, "out")
    i = check_range(in_range, in_sel.size, "in")
    dtype = np.dtype(of.ref.dtype if of.ref.dtype != "bfloat16" else "float32")
    if mode == "auto":
        mode = "reverse" if o[1] - o[0] <= i[1] - i[0] else "forward"
    return Plan(of, wrt, mode, o, i, dtype.itemsize, dtype.name, out_sel, in_sel)


def dense(g: Any) -> Any:
    import tensorflow as tf

    return tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g


def _block_fn(step_fn: Callable[[], Any], og: OpGraph, plan: Plan, count: int) -> Any:
    """Concrete function(start) -> [count, across] block of the flat Jacobian."""
    import tensorflow as tf
    from tensorflow.python.ops.parallel_for.control_flow_ops import pfor

    n_out_all, n_in_all = plan.of.ref.size, plan.wrt.ref.size
    out_run, in_run = _run_of(plan.out_flat), _run_of(plan.in_flat)

    def pick(flat: Any, run: tuple[int, int] | None, ids: np.ndarray) -> Any:
        """The selected elements of a flat vector: a slice when they are one run."""
        return flat[run[0] : run[1]] if run is not None else tf.gather(flat, tf.constant(ids))

    def index(k: Any, run: tuple[int, int] | None, ids: np.ndarray) -> Any:
        """The tensor's flat index of the k-th selected element."""
        k = tf.cast(k, tf.int64)
        return run[0] + k if run is not None else tf.gather(tf.constant(ids), k)

    def gradients(y: Any, x: Any, gy: Any) -> Any:
        (g,) = tf.gradients(y, [x], grad_ys=gy)
        if g is None:
            raise _NoGradient()
        return dense(g)

    def build(p: Picker, start: Any) -> Any:
        y, x = p.tensor(plan.of.ref), p.source(plan.wrt)
        if plan.mode == "reverse":

            def row(i: Any) -> Any:
                k = index(start + i, out_run, plan.out_flat)
                gy = tf.reshape(tf.one_hot(k, n_out_all, dtype=y.dtype), tf.shape(y))
                return pick(tf.reshape(gradients(y, x, gy), [-1]), in_run, plan.in_flat)

            return pfor(row, count)
        v = tf.zeros_like(y)
        g = gradients(y, x, v)

        def column(j: Any) -> Any:
            k = index(start + j, in_run, plan.in_flat)
            u = tf.reshape(tf.one_hot(k, n_in_all, dtype=g.dtype), tf.shape(g))
            (jv,) = tf.gradients(g, [v], grad_ys=u)
            jv = tf.zeros_like(y) if jv is None else dense(jv)
            return pick(tf.reshape(tf.cast(jv, y.dtype), [-1]), out_run, plan.out_flat)

        return pfor(column, count)

    return trace_step(step_fn, og, build)


def _run_of(flat: np.ndarray) -> tuple[int, int] | None:
    """``(start, stop)`` when the flat indices are one increasing run."""
    if flat.size and int(flat[-1]) - int(flat[0]) + 1 == flat.size:
        return int(flat[0]), int(flat[-1]) + 1
    return None


def compute(
    step_fn: Callable[[], Any],
    og: OpGraph,
    of: Resolved,
    wrt: Resolved,
    *,
    out_range: list[int] | None = None,
    in_range: list[int] | None = None,
    mode: str = "auto",
    budget: int = DEFAULT_BUDGET,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    cache: dict[tuple[Any, ...], Any] | None = None,
    of_index: Spec | None = None,
    wrt_index: Spec | None = None,
) -> Jacobian:
    """J(of, wrt): a result with ``status`` ok / no_path / cut, or a JacobianError.
    ``of_index`` / ``wrt_index``: structured slices (:mod:`tfviz.jacobian.slices`)."""
    refuse_nested(of)
    refuse_nested(wrt)
    if -1 in of.ref.shape or -1 in wrt.ref.shape:
        _learn_shapes(step_fn, og, of, wrt)
    plan = make_plan(of, wrt, out_range, in_range, mode, of_index, wrt_index)
    assert plan.out_sel is not None and plan.in_sel is not None  # set in __post_init__
    sliced = plan.ranged
    result = Jacobian(
        of.ref,
        wrt.ref,
        mode=plan.mode,
        out_range=list(plan.out_range) if sliced else None,
        in_range=list(plan.in_range) if sliced else None,
        out_index=plan.out_sel.spec,
        in_index=plan.in_sel.spec,
    )
    if _path_ends(og, wrt.ref, of.ref) is None:
        result.status = "no_path"
        result.message = (
            f"'{of.ref.name}' does not depend on '{wrt.ref.name}': no path in the"
            " graph leads from one to the other, so the Jacobian is not a matrix of"
            " zeros but undefined here"
        )
        return result
    guard(plan, budget)
    clock = time.perf_counter()
    try:
        block = _run_chunks(step_fn, og, plan, progress, cancelled, cache)
    except _NoGradient:
        return _explain_cut(og, result)
    except JacobianError:
        raise
    except Exception as exc:  # an op whose gradient raises is an answer
        from tfviz.engine.trace import raising_op

        op = raising_op(exc)
        if op is None and not isinstance(exc, LookupError):
            raise
        result.status = "cut"
        result.cut = Cut(
            op=op.name if op is not None else "",
            op_type=op.type if op is not None else "",
            kind="unimplemented" if op is not None else "no_gradient",
            message=f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}",
        )
        result.message = f"computing the gradient raised at {result.cut.op_type} '{result.cut.op}'"
        return result
    result.mode = plan.mode  # forward mode may have fallen back to reverse
    matrix = block if plan.mode == "reverse" else block.T
    if not sliced:
        matrix = matrix.reshape(list(plan.out_sel.shape) + list(plan.in_sel.shape))
    result.values = Array.from_numpy(np.ascontiguousarray(matrix))
    result.chunks = -(-(plan.n_out if plan.mode == "reverse" else plan.n_in) // plan.chunk())
    result.seconds = round(time.perf_counter() - clock, 4)
    return result


def _run_chunks(
    step_fn: Callable[[], Any],
    og: OpGraph,
    plan: Plan,
    progress: Progress | None,
    cancelled: Callable[[], bool] | None,
    cache: dict[tuple[Any, ...], Any] | None,
) -> np.ndarray:
    import tensorflow as tf

    lo, hi = 0, plan.n_out if plan.mode == "reverse" else plan.n_in
    step = plan.chunk()
    starts = list(range(lo, hi, step))
    blocks = []
    cache = {} if cache is None else cache
    for k, start in enumerate(starts):
        if cancelled is not None and cancelled():
            raise JacobianError("cancelled", f"cancelled after {k} of {len(starts)} chunks")
        count = min(step, hi - start)
        key = (
            plan.of.ref.node,
            plan.of.ref.index,
            plan.wrt.ref.node,
            plan.wrt.ref.index,
            plan.mode,
            plan.out_flat.size,
            hash(plan.out_flat.tobytes()),
            plan.in_flat.size,
            hash(plan.in_flat.tobytes()),
            count,
        )
        fn = cache.get(key)
        if fn is None:
            try:
                fn = cache[key] = _block_fn(step_fn, og, plan, count)
            except Exception as exc:
                if plan.mode == "forward" and isinstance(exc, LookupError):
                    plan.mode = "reverse"  # an op's gradient has no gradient: go the other way
                    return _run_chunks(step_fn, og, plan, progress, cancelled, cache)
                raise
        blocks.append(np.asarray(fn(tf.constant(start, tf.int32)).numpy(), dtype=plan.dtype))
        if progress is not None:
            progress(k + 1, len(starts))
    return blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=0)


def _learn_shapes(step_fn: Callable[[], Any], og: OpGraph, of: Resolved, wrt: Resolved) -> None:
    """Shapes the analysis saw only as unknown: run the step once and read them."""
    import tensorflow as tf

    def build(p: Picker, _start: Any) -> Any:
        return tf.shape(p.tensor(of.ref)), tf.shape(p.source(wrt))

    fn = trace_step(step_fn, og, build, with_start=False)
    y_shape, x_shape = fn()
    of.ref.shape = [int(d) for d in y_shape.numpy()]
    wrt.ref.shape = [int(d) for d in x_shape.numpy()]


def _path_ends(og: OpGraph, wrt: TensorRef, of: TensorRef) -> tuple[str, str] | None:
    """The nodes a path from ``wrt`` to ``of`` runs between in the flattened graph, where one
    does: a call's or a loop's output is carried by its body's nodes, the op itself drawn
    as its body with no edges of its own (:meth:`OpGraph.stand_ins`); None where none does."""
    for src in og.stand_ins(wrt.node, wrt.index):
        for dst in og.stand_ins(of.node, of.index):
            if src in og.g and dst in og.g and nx.has_path(og.g, src, dst):
                return src, dst
    return None


def _explain_cut(og: OpGraph, result: Jacobian) -> Jacobian:
    """A path exists but carries no gradient: name the op that cuts it, as the graph view does."""
    from tfviz.engine.flow import frontier_cuts, gradient_reach, path_region
    from tfviz.engine.gradrules import Prober, annotate

    src, dst = _path_ends(og, result.wrt, result.of) or (result.wrt.node, result.of.node)
    region = path_region(og.g, src, dst)
    sub = og.g.subgraph(region).copy()
    annotate(sub, region, Prober())
    cuts = frontier_cuts(sub, region, gradient_reach(sub, dst))
    result.status = "cut"
    if cuts:
        u, v = cuts[0]
        e, node = sub.edges[u, v], sub.nodes[v]
        source = node.get("source")
        result.cut = Cut(
            op=v,
            op_type=node.get("type", ""),
            kind=e.get("status", "other"),
            message=e.get("message", ""),
            file=getattr(source, "file", None),
            line=getattr(source, "line", None),
        )
        result.message = (
            f"every path from '{result.wrt.name}' to '{result.of.name}' is cut: at"
            f" {result.cut.op_type} '{v}' ({result.cut.kind}: {result.cut.message})"
        )
    else:
        result.message = (
            f"'{result.of.name}' depends on '{result.wrt.name}' in the graph, but"
            " TensorFlow returns no gradient along any path"
        )
    return result
