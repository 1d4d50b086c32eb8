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
- The full result is refused above a byte budget; the refusal gives the
  size and index-range slices that fit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from tfviz.engine.graphbuild import OpGraph
from tfviz.jacobian.data import Array, Cut, Jacobian, JacobianError, fmt_bytes
from tfviz.jacobian.names import Resolved, refuse_nested
from tfviz.jacobian.retrace import Picker, trace_step

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
    out_range: tuple[int, int]
    in_range: tuple[int, int]
    itemsize: int
    dtype: str

    @property
    def n_out(self) -> int:
        return self.out_range[1] - self.out_range[0]

    @property
    def n_in(self) -> int:
        return self.in_range[1] - self.in_range[0]

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
    if (not isinstance(r, (list, tuple)) or len(r) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in r)
            or not 0 <= r[0] < r[1] <= size):
        raise JacobianError("bad_request", f"{what}_range must be [start, stop) with"
                            f" 0 <= start < stop <= {size}, got {r!r}")
    return int(r[0]), int(r[1])


def guard(plan: Plan, budget: int) -> None:
    """Refuse a result above ``budget`` bytes, offering slices that fit."""
    if plan.nbytes <= budget:
        return
    offers = []
    rows = budget // max(1, plan.n_in * plan.itemsize)
    cols = budget // max(1, plan.n_out * plan.itemsize)
    o0, i0 = plan.out_range[0], plan.in_range[0]
    if rows >= 1:
        offers.append({"out_range": [o0, o0 + rows], "in_range": list(plan.in_range),
                       "bytes": rows * plan.n_in * plan.itemsize})
    if cols >= 1:
        offers.append({"out_range": list(plan.out_range), "in_range": [i0, i0 + cols],
                       "bytes": cols * plan.n_out * plan.itemsize})
    if not offers:
        side = max(1, int((budget // plan.itemsize) ** 0.5))
        offers.append({"out_range": [o0, o0 + min(side, plan.n_out)],
                       "in_range": [i0, i0 + min(side, plan.n_in)],
                       "bytes": min(side, plan.n_out) * min(side, plan.n_in) * plan.itemsize})
    raise JacobianError(
        "too_big",
        f"the Jacobian of '{plan.of.ref.name}' {tuple(plan.of.ref.shape)} w.r.t."
        f" '{plan.wrt.ref.name}' {tuple(plan.wrt.ref.shape)} would take {fmt_bytes(plan.nbytes)}"
        f" ({plan.n_out} x {plan.n_in} {plan.dtype}), above the budget of {fmt_bytes(budget)};"
        " ask for a slice of the output and/or input (flat index ranges) instead",
        size_bytes=plan.nbytes, budget_bytes=budget, offers=offers)


def make_plan(of: Resolved, wrt: Resolved, out_range: list[int] | None,
              in_range: list[int] | None, mode: str = "auto") -> Plan:
    if mode not in ("auto", "reverse", "forward"):
        raise JacobianError("bad_request", f'mode must be "auto", "reverse" or "forward", got {mode!r}')
    o = check_range(out_range, of.ref.size, "out")
    i = check_range(in_range, wrt.ref.size, "in")
    dtype = np.dtype(of.ref.dtype if of.ref.dtype != "bfloat16" else "float32")
    if mode == "auto":
        mode = "reverse" if o[1] - o[0] <= i[1] - i[0] else "forward"
    return Plan(of, wrt, mode, o, i, dtype.itemsize, dtype.name)


def dense(g: Any) -> Any:
    import tensorflow as tf

    return tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g


def _block_fn(step_fn: Callable[[], Any], og: OpGraph, plan: Plan, count: int) -> Any:
    """Concrete function(start) -> [count, across] block of the flat Jacobian."""
    import tensorflow as tf
    from tensorflow.python.ops.parallel_for.control_flow_ops import pfor

    n_out_all, n_in_all = plan.of.ref.size, plan.wrt.ref.size
    (o0, o1), (i0, i1) = plan.out_range, plan.in_range

    def gradients(y: Any, x: Any, gy: Any) -> Any:
        (g,) = tf.gradients(y, [x], grad_ys=gy)
        if g is None:
            raise _NoGradient()
        return dense(g)

    def build(p: Picker, start: Any) -> Any:
        y, x = p.tensor(plan.of.ref), p.source(plan.wrt)
        if plan.mode == "reverse":
            def row(i: Any) -> Any:
                gy = tf.reshape(tf.one_hot(start + i, n_out_all, dtype=y.dtype), tf.shape(y))
                return tf.reshape(gradients(y, x, gy), [-1])[i0:i1]
            return pfor(row, count)
        v = tf.zeros_like(y)
        g = gradients(y, x, v)

        def column(j: Any) -> Any:
            u = tf.reshape(tf.one_hot(start + j, n_in_all, dtype=g.dtype), tf.shape(g))
            (jv,) = tf.gradients(g, [v], grad_ys=u)
            jv = tf.zeros_like(y) if jv is None else dense(jv)
            return tf.reshape(tf.cast(jv, y.dtype), [-1])[o0:o1]
        return pfor(column, count)

    return trace_step(step_fn, og, build)


def compute(step_fn: Callable[[], Any], og: OpGraph, of: Resolved, wrt: Resolved, *,
            out_range: list[int] | None = None, in_range: list[int] | None = None,
            mode: str = "auto", budget: int = DEFAULT_BUDGET, progress: Progress | None = None,
            cancelled: Callable[[], bool] | None = None,
            cache: dict[tuple[Any, ...], Any] | None = None) -> Jacobian:
    """J(of, wrt): a result with ``status`` ok / no_path / cut, or a JacobianError."""
    refuse_nested(of)
    refuse_nested(wrt)
    if -1 in of.ref.shape or -1 in wrt.ref.shape:
        _learn_shapes(step_fn, og, of, wrt)
    plan = make_plan(of, wrt, out_range, in_range, mode)
    sliced = plan.out_range != (0, of.ref.size) or plan.in_range != (0, wrt.ref.size)
    result = Jacobian(of.ref, wrt.ref, mode=plan.mode,
                      out_range=list(plan.out_range) if sliced else None,
                      in_range=list(plan.in_range) if sliced else None)
    if not nx.has_path(og.g, wrt.ref.node, of.ref.node):
        result.status = "no_path"
        result.message = (f"'{of.ref.name}' does not depend on '{wrt.ref.name}': no path in the"
                          " graph leads from one to the other, so the Jacobian is not a matrix of"
                          " zeros but undefined here")
        return result
    guard(plan, budget)
    clock = time.perf_counter()
    try:
        block = _run_chunks(step_fn, og, plan, progress, cancelled, cache)
    except _NoGradient:
        return _explain_cut(og, result)
    except JacobianError:
        raise
    except Exception as exc:  # noqa: BLE001 - an op whose gradient raises is an answer
        from tfviz.engine.trace import raising_op

        op = raising_op(exc)
        if op is None and not isinstance(exc, LookupError):
            raise
        result.status = "cut"
        result.cut = Cut(op=op.name if op is not None else "", op_type=op.type if op is not None
                         else "", kind="unimplemented" if op is not None else "no_gradient",
                         message=f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}")
        result.message = f"computing the gradient raised at {result.cut.op_type} '{result.cut.op}'"
        return result
    result.mode = plan.mode  # forward mode may have fallen back to reverse
    matrix = block if plan.mode == "reverse" else block.T
    if not sliced:
        matrix = matrix.reshape(list(of.ref.shape) + list(wrt.ref.shape))
    result.values = Array.from_numpy(np.ascontiguousarray(matrix))
    result.chunks = -(-(plan.n_out if plan.mode == "reverse" else plan.n_in) // plan.chunk())
    result.seconds = round(time.perf_counter() - clock, 4)
    return result


def _run_chunks(step_fn: Callable[[], Any], og: OpGraph, plan: Plan, progress: Progress | None,
                cancelled: Callable[[], bool] | None, cache: dict[tuple[Any, ...], Any] | None) -> np.ndarray:
    import tensorflow as tf

    lo, hi = plan.out_range if plan.mode == "reverse" else plan.in_range
    step = plan.chunk()
    starts = list(range(lo, hi, step))
    blocks = []
    cache = {} if cache is None else cache
    for k, start in enumerate(starts):
        if cancelled is not None and cancelled():
            raise JacobianError("cancelled", f"cancelled after {k} of {len(starts)} chunks")
        count = min(step, hi - start)
        key = (plan.of.ref.node, plan.of.ref.index, plan.wrt.ref.node, plan.wrt.ref.index,
               plan.mode, plan.out_range, plan.in_range, count)
        fn = cache.get(key)
        if fn is None:
            try:
                fn = cache[key] = _block_fn(step_fn, og, plan, count)
            except Exception as exc:  # noqa: BLE001
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


def _explain_cut(og: OpGraph, result: Jacobian) -> Jacobian:
    """A path exists but carries no gradient: name the op that cuts it, as the graph view does."""
    from tfviz.engine.flow import frontier_cuts, gradient_reach, path_region
    from tfviz.engine.gradrules import Prober, annotate

    src, dst = result.wrt.node, result.of.node
    region = path_region(og.g, src, dst)
    sub = og.g.subgraph(region).copy()
    annotate(sub, region, Prober())
    cuts = frontier_cuts(sub, region, gradient_reach(sub, dst))
    result.status = "cut"
    if cuts:
        u, v = cuts[0]
        e, node = sub.edges[u, v], sub.nodes[v]
        source = node.get("source")
        result.cut = Cut(op=v, op_type=node.get("type", ""), kind=e.get("status", "other"),
                         message=e.get("message", ""), file=getattr(source, "file", None),
                         line=getattr(source, "line", None))
        result.message = (f"every path from '{result.wrt.name}' to '{result.of.name}' is cut: at"
                          f" {result.cut.op_type} '{v}' ({result.cut.kind}: {result.cut.message})")
    else:
        result.message = (f"'{result.of.name}' depends on '{result.wrt.name}' in the graph, but"
                          " TensorFlow returns no gradient along any path")
    return result
