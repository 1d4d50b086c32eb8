"""The chain-rule split of seed 3: J(y,x) == J(y,h) @ J(h,x).

``tf.gradients(y, h)`` has h's shape and ``tf.gradients(h, x)`` has x's,
because each sums over its target's elements; their "product" cannot give
``tf.gradients(y, x)`` back. The per-element Jacobians do: flattened to
matrices, J(y,h) is (|y|, |h|) and J(h,x) is (|h|, |x|), and their matrix
product is J(y,x) whenever every path from x to y passes through h.
Summing J(y,x) over y's elements gives what ``tf.gradients(y, x)``
returned, which is why its shape is x's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tfviz.engine.graphbuild import OpGraph
from tfviz.jacobian.data import Array, ChainSplit, Jacobian
from tfviz.jacobian.names import Resolved
from tfviz.jacobian.retrace import Picker, trace_step

Compute = Callable[[Resolved, Resolved], Jacobian]


def chain_split(
    compute: Compute, step_fn: Callable[[], Any], og: OpGraph, y: Resolved, h: Resolved, x: Resolved
) -> ChainSplit:
    """The four matrices and the two difference figures.

    ``compute(of, wrt)`` computes one Jacobian (with the session's budget,
    progress and cancel). A part that is not a matrix (no path, a cut) is
    returned as it is, with a message, and no product.
    """
    j_yh, j_hx, j_yx = compute(y, h), compute(h, x), compute(y, x)
    split = ChainSplit(j_yh, j_hx, j_yx)
    parts = {"J(y,h)": j_yh, "J(h,x)": j_hx, "J(y,x)": j_yx}
    missing = [f"{k} is {j.status.replace('_', ' ')}" for k, j in parts.items() if j.status != "ok"]
    if missing:
        split.message = "; ".join(missing) + ": the split has no product"
        return split
    # every status is "ok": each has its values
    a, b, c = (j.array().astype(np.float64) for j in (j_yh, j_hx, j_yx))  # type: ignore[union-attr]
    ny, nh, nx = y.ref.size, h.ref.size, x.ref.size
    product = a.reshape(ny, nh) @ b.reshape(nh, nx)
    split.max_abs_diff = float(np.max(np.abs(product - c.reshape(ny, nx)))) if product.size else 0.0
    split.product = Array.from_numpy(product.reshape(c.shape).astype(j_yx.array().dtype))  # type: ignore[union-attr]
    summed = tf_gradients(step_fn, og, y, x)
    split.tf_gradients = Array.from_numpy(summed)
    split.tf_gradients_diff = (
        float(np.max(np.abs(summed - c.reshape(ny, nx).sum(axis=0).reshape(summed.shape))))
        if summed.size
        else 0.0
    )
    split.message = (
        f"J(y,h) @ J(h,x) differs from J(y,x) by at most {split.max_abs_diff:.3g};"
        f" tf.gradients(y, x) has x's shape {tuple(x.ref.shape)}: it is J(y,x) summed"
        f" over y's {ny} elements (differs from that sum by at most"
        f" {split.tf_gradients_diff:.3g})"
    )
    if not _through(og, y, h, x):
        split.message += (
            f". Some path from '{x.ref.name}' to '{y.ref.name}' bypasses"
            f" '{h.ref.name}', so the product is only part of J(y,x)"
        )
    return split


def tf_gradients(step_fn: Callable[[], Any], og: OpGraph, y: Resolved, x: Resolved) -> np.ndarray:
    """What ``tf.gradients(y, x)[0]`` returns in the traced step (x's shape)."""
    import tensorflow as tf

    def build(p: Picker, _start: Any) -> Any:
        yt, xt = p.tensor(y.ref), p.source(x)
        (g,) = tf.gradients(yt, [xt])
        if g is None:
            return tf.zeros(x.ref.shape, yt.dtype)
        return tf.convert_to_tensor(g)

    summed: np.ndarray = trace_step(step_fn, og, build, with_start=False)().numpy()
    return summed


def _through(og: OpGraph, y: Resolved, h: Resolved, x: Resolved) -> bool:
    """Every path from x to y passes through h (removing h disconnects them)."""
    import networkx as nx

    g = nx.restricted_view(og.g, og.stand_ins(h.ref.node, h.ref.index), [])
    return not any(
        a in g and b in g and nx.has_path(g, a, b)
        for a in og.stand_ins(x.ref.node, x.ref.index)
        for b in og.stand_ins(y.ref.node, y.ref.index)
    )
