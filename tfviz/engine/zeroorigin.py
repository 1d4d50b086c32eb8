"""Where an exact-zero gradient comes from when the values themselves are zero.

A dead ReLU or a zero factor is where the gradient stops, but not always the cause: when
the values reaching that op are all zero because an op before it made them so (a cast to
``uint8`` of pixels rescaled to [0, 1), a mask that is all False), that earlier op is what
the user has to change. The step is run forward once more, traced, and the first op on the
way to the zeroing op whose output is all zero while an input is not is named instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import networkx as nx

from tfviz.engine.graphdoc import mark_op
from tfviz.report import Report
from tfviz.vocabulary import Kind, Severity

#: ops that make zeros by design, never the surprise
_MAKERS_OF_ZEROS = frozenset(
    {"ZerosLike", "Fill", "Const", "Placeholder", "Shape", "Size", "Rank", "OnesLike"}
)

#: the zeroing ops whose zeros can come from their input's values
_BLAMES_VALUES = frozenset({"Relu", "Relu6", "MatMul", "Mul", "BatchMatMulV2", "Einsum", "Conv2D"})

INTEGER_HINT = (
    "Keep the values floating-point on the way: a cast to an integer type truncates every"
    " value in (-1, 1) to 0 (Keras 3's Rescaling(1/255, dtype='uint8') makes every pixel 0);"
    " rescale in float32 and cast to an integer type, if at all, before rescaling."
)


def zero_maker_text(op_type: str, dtypes: list[str]) -> str:
    """Why an op of ``op_type`` with outputs ``dtypes`` turns non-zero values into zeros.

    >>> zero_maker_text("Cast", ["uint8"])
    'it casts them to uint8, which truncates every value in (-1, 1) to 0'
    """
    if op_type == "Cast" and dtypes and dtypes[0] not in ("float16", "bfloat16", "float32", "float64"):
        return f"it casts them to {dtypes[0]}, which truncates every value in (-1, 1) to 0"
    if op_type in ("Floor", "Round", "Sign"):
        return f"{op_type} maps them all to 0"
    return f"its non-zero inputs come out as all zeros at {op_type}"


def explain_zero_origins(report: Report, graph: nx.DiGraph[str], fn: Callable[[], Any]) -> None:
    """Move each zero problem at a :data:`_BLAMES_VALUES` op to the first op before it that
    turns non-zero values into all zeros, where there is one (best effort: a step that
    cannot run forward again keeps the verdict as it was)."""
    problems = [
        p for p in report.problems if p.kind == Kind.ZERO and p.op in graph and p.op_type in _BLAMES_VALUES
    ]
    if not problems:
        return
    wanted: dict[str, set[str]] = {}
    for p in problems:
        names = set()
        for nid in nx.ancestors(graph, p.op):
            op = graph.nodes[nid].get("op")
            if op is not None and getattr(op, "type", "") not in _MAKERS_OF_ZEROS:
                names.add(op.name)
        wanted[p.op] = names
    try:
        origins = _zero_makers(fn, set().union(*wanted.values()))
    except Exception:  # noqa: BLE001 - the explanation is extra; the verdict stands without it
        return
    by_name = {getattr(d.get("op"), "name", None): nid for nid, d in graph.nodes(data=True)}
    for p in problems:
        first = next((name for name in origins if name in wanted[p.op] and name in by_name), None)
        if first is None:
            continue
        nid = by_name[first]
        node = graph.nodes[nid]
        op_type = node.get("type", "")
        dtypes = [str(t.dtype.name) for t in getattr(node.get("op"), "outputs", [])]
        line = node.get("source")
        where = f" ({line.label(os.path.basename)})" if line is not None and line.line else ""
        label = f"{op_type} '{node.get('name', nid)}'"
        p.message = (
            f"the values are all zero from {label}{where} on: {zero_maker_text(op_type, dtypes)},"
            " so every op computed from them passes back a zero gradient"
        )
        p.op, p.op_type, p.source = nid, op_type, line or p.source
        if op_type == "Cast":
            p.hint = INTEGER_HINT
        single = _one_value_per_channel(graph, nid, report)
        if single is not None:
            p.message, made = single
            p.severity, p.hint = Severity.ERROR, BATCHNORM_HINT
            p.source = made or p.source
        mark_op(report.graph, nid, Kind.ZERO, p.message)  # drawn where the problem now is
        for v in report.variables:
            if v.name in p.variables and v.kind == Kind.ZERO:
                v.explanation = f"the gradient is exactly zero: {p.message}"
                v.blocked_at = [nid]
    _merge_moved(report)
    _nothing_trains(report)


BATCHNORM_HINT = (
    "Give each BatchNormalization more than one value per channel to normalize over: a larger"
    " batch, or no batch normalization where the map is 1x1 at batch size 1 (pix2pix's"
    " innermost block), or a normalization that does not work across the batch"
    " (GroupNormalization, LayerNormalization)."
)


def _one_value_per_channel(graph: nx.DiGraph[str], nid: str, report: Report) -> tuple[str, Any] | None:
    """Where the op making the zeros is a BatchNormalization's (``x - mean`` or its variance)
    and that layer gets one value per channel (batch times map size 1): what to say, and the
    line that built the layer (its gamma's), else None."""
    op = graph.nodes[nid].get("op")
    parts = getattr(op, "name", "").split("/")
    at = next((i for i, part in enumerate(parts) if part.startswith("batch_normalization")), None)
    if op is None or at is None or not op.inputs:
        return None
    shape = op.inputs[0].shape
    if shape.rank is None or shape.rank < 2 or not shape[:-1].is_fully_defined():
        return None
    per_channel = 1
    for d in shape[:-1]:
        per_channel *= int(d)
    if per_channel != 1:
        return None
    layer = parts[at]
    names = {layer, layer.rsplit("_", 1)[0]} if layer.rsplit("_", 1)[-1].isdigit() else {layer}
    gamma = next(
        (v for v in report.variables if any(f"/{n}/" in f"/{v.tf_name}" for n in names) and v.source),
        None,
    )
    shown = next(
        (n for n in sorted(names, key=len) if gamma is None or f"/{n}/" in f"/{gamma.tf_name}"), layer
    )
    dims = "x".join(str(int(d)) for d in shape)
    made = f", built at {gamma.source.label(os.path.basename)}" if gamma is not None and gamma.source else ""
    return (
        f"BatchNormalization '{shown}'{made} gets one value per channel: its input is {dims}"
        f" (batch {int(shape[0])}, a {'x'.join(str(int(d)) for d in shape[1:-1]) or '1'} map),"
        " so x - mean is exactly 0 and its output is zero whatever the values; every gradient"
        " through it is zero",
        gamma.source if gamma is not None else None,
    )


def _merge_moved(report: Report) -> None:
    """Zero problems that now name the same op are one problem, the gravest first."""
    first: dict[str, Any] = {}
    for p in list(report.problems):
        if p.kind != Kind.ZERO or not p.op:
            continue
        kept = first.setdefault(p.op, p)
        if kept is p:
            continue
        kept.variables.extend(v for v in p.variables if v not in kept.variables)
        if p.severity == Severity.ERROR:
            kept.severity = Severity.ERROR
        report.problems.remove(p)


def _zero_makers(fn: Callable[[], Any], names: set[str]) -> list[str]:
    """The ops called ``names`` whose outputs are all zero while an input is not, in the order
    the step makes them (a trace lists its ops so), from one forward run of the step."""
    import tensorflow as tf

    from tfviz.engine.trace import as_value, autograph

    converted = autograph(fn)
    ops: list[Any] = []

    def nonzero(t: Any) -> Any:
        return tf.reduce_any(tf.not_equal(t, tf.zeros_like(t)))

    def body() -> Any:
        as_value(converted())
        flags = []
        for op in tf.compat.v1.get_default_graph().get_operations():
            if op.name not in names:
                continue
            outs = [t for t in op.outputs if t.dtype.is_floating or t.dtype.is_integer]
            ins = [t for t in op.inputs if t.dtype.is_floating or t.dtype.is_integer]
            if not outs or not ins:
                continue
            made_zero = tf.logical_not(tf.reduce_any(tf.stack([nonzero(t) for t in outs])))
            fed = tf.reduce_any(tf.stack([nonzero(t) for t in ins]))
            flags.append(tf.logical_and(made_zero, fed))
            ops.append(op)
        return tf.stack(flags) if flags else tf.zeros([0], tf.bool)

    made = tf.function(body, autograph=False)().numpy().tolist()
    return [op.name for op, bad in zip(ops, made) if bad]


def _nothing_trains(report: Report) -> None:
    """A model none of whose variables gets a non-zero gradient trains nothing at all: its
    zero problems are errors, not warnings (the variables held by one name, ``encoder.``)."""
    by_holder: dict[str, list[Any]] = {}
    for v in report.variables:
        by_holder.setdefault(_holder(v.name), []).append(v)
    dead = {
        holder
        for holder, rows in by_holder.items()
        if len(rows) > 1 and all(v.kind == Kind.ZERO for v in rows)
    }
    if not dead:
        return
    for p in report.problems:
        holders = {_holder(v) for v in p.variables} & dead
        if p.kind == Kind.ZERO and holders:
            if p.severity != Severity.ERROR:
                p.severity = Severity.ERROR
                names = sorted(holders)
                p.message += (
                    f"; {', '.join(names)} trains nothing at all: every one of its variables gets zero"
                )
    report.ok = report.ok and not any(p.severity == Severity.ERROR for p in report.problems)


def _holder(name: str) -> str:
    """The name a variable is held under at the top (``encoder`` of ``encoder.layers[2].kernel``).

    >>> _holder("encoder.layers[2].kernel"), _holder("stack[0].bias")
    ('encoder', 'stack')
    """
    return name.split(".")[0].split("[")[0]
