"""Why a gradient turned non-finite at an op: what its inputs held at that step.

The verdict names the op where the gradient first becomes NaN or infinite. What the user
needs next is which input left the op's domain (``Log`` of 0, ``Sqrt`` of -1e-8, a division
by 0, an ``Exp`` that overflows) or grew until float32 overflowed. That takes the op's forward
values, which the gradient trace does not keep, so the step is run forward once more, only
when there is a NaN to explain, with the inputs' ranges of the named ops as its outputs.
"""

from __future__ import annotations

import contextlib
import math
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tfviz.engine.explain import HINT
from tfviz.engine.graphdoc import mark_op
from tfviz.report import Problem, Report
from tfviz.vocabulary import Kind, Severity

#: ``sqrt`` of float32's largest value: a square (or product) of values past it overflows
SQUARE_LIMIT = 1.8e19
#: ``log`` of float32's largest value: ``exp`` of more overflows
EXP_LIMIT = 88.72
OVERFLOW_HINT = (
    "Values grew until float32 overflowed: lower the learning rate, normalize the inputs,"
    " or clip the gradients (clipnorm); the watched norms show how fast they grew."
)

DATA_HINT = (
    "Find the bad records in the data: tf.debugging.check_numerics(batch, ...) where the batch"
    " is made, then repair or drop them (dataset.filter with tf.math.is_finite)."
)


@dataclass(frozen=True)
class InputRange:
    """One float input of an op over the step: its smallest, largest and smallest absolute value."""

    index: int
    low: float
    high: float
    tiniest: float

    @property
    def finite(self) -> bool:
        return all(math.isfinite(x) for x in (self.low, self.high))

    @property
    def largest(self) -> float:
        return max(abs(self.low), abs(self.high))


def _g(x: float) -> str:
    return f"{x:.3g}"


def domain_text(op_type: str, ranges: list[InputRange]) -> tuple[str, bool]:
    """What was out of range at the op, and whether it is an overflow (not a domain error).

    >>> domain_text("Log", [InputRange(0, 0.0, 1.0, 0.0)])
    ('Log of 0: its input reaches 0, where log is -inf and its gradient 1/x infinite', False)
    >>> domain_text("Sqrt", [InputRange(0, -1e-08, 4.0, 0.0)])
    ('Sqrt of -1e-08: its input reaches 0 or below, where the gradient 1/(2*sqrt(x)) is not finite', False)
    >>> domain_text("RealDiv", [InputRange(0, 1.0, 2.0, 1.0), InputRange(1, 0.0, 3.0, 0.0)])
    ('a division by 0: the denominator (input 1) reaches 0', False)
    >>> domain_text("Exp", [InputRange(0, -3.0, 95.0, 0.5)])
    ('Exp of 95: above 88.7, exp overflows float32', True)
    >>> domain_text("Square", [InputRange(0, -2e19, 3e20, 1.0)])
    ('Square of values up to 3e+20: past 1.8e+19 a square overflows float32', True)
    >>> domain_text("Pow", [InputRange(0, -1.2, 3.0, 0.1), InputRange(1, 0.5, 0.5, 0.5)])
    ('Pow of a base that reaches -1.2: a fractional power of 0 or below is not finite', False)
    >>> domain_text("Pow", [InputRange(0, -1.2, 3.0, 0.1), InputRange(1, 2.0, 2.0, 2.0)])[0]
    'Pow with input 0 in [-1.2, 3], input 1 in [2, 2]'
    >>> domain_text("Pow", [InputRange(0, 0.0, 3.0, 0.0), InputRange(1, -1.0, -1.0, 1.0)])
    ('Pow of a base that reaches 0 to the power -1: not finite', False)
    """
    if not ranges:
        return "", False
    bad = [r for r in ranges if not r.finite]
    if bad:
        r = bad[0]
        return (
            f"its input {r.index} is already non-finite ({_g(r.low)} to {_g(r.high)}): the NaN comes"
            " from an earlier op of the forward pass",
            False,
        )
    x = ranges[0]
    if op_type == "Log" and x.low <= 0:
        where = "0" if x.low == 0 else "negative values"
        return (
            f"Log of {_g(x.low)}: its input reaches {where}, where log is"
            f" {'-inf' if x.low == 0 else 'NaN'} and its gradient 1/x infinite",
            False,
        )
    if op_type == "Log1p" and x.low <= -1:
        return f"Log1p of {_g(x.low)}: its input reaches -1 or below, where log1p is not finite", False
    if op_type in ("Sqrt", "Rsqrt") and x.low <= 0:
        grad = "1/(2*sqrt(x))" if op_type == "Sqrt" else "-1/(2*x*sqrt(x))"
        return (
            f"{op_type} of {_g(x.low)}: its input reaches 0 or below, where the gradient {grad}"
            " is not finite",
            False,
        )
    if op_type in ("Acos", "Asin", "Atanh") and x.largest >= 1:
        return f"{op_type} of {_g(x.high if abs(x.high) >= 1 else x.low)}: outside (-1, 1)", False
    denominator = {"RealDiv": 1, "Div": 1, "FloorDiv": 1, "Xdivy": 1, "Reciprocal": 0, "Inv": 0}
    if op_type in denominator:
        i = denominator[op_type]
        d = next((r for r in ranges if r.index == i), None)
        if d is not None and d.tiniest == 0:
            return f"a division by 0: the denominator (input {i}) reaches 0", False
    if op_type == "Pow" and x.low <= 0:
        power = next((r for r in ranges if r.index == 1), None)
        whole = power is not None and power.low == power.high and float(power.low).is_integer()
        if not whole:
            return (
                f"Pow of a base that reaches {_g(x.low)}: a fractional power of 0 or below is not finite",
                False,
            )
        assert power is not None
        if power.low < 1 and x.tiniest == 0:  # a whole power: only 0 to a power below 1
            return f"Pow of a base that reaches 0 to the power {_g(power.low)}: not finite", False
    if op_type == "Exp" and x.high > EXP_LIMIT:
        return f"Exp of {_g(x.high)}: above {EXP_LIMIT:.3g}, exp overflows float32", True
    largest = max(r.largest for r in ranges)
    if largest > SQUARE_LIMIT:
        what = "a square" if op_type in ("Square", "Pow", "SquaredDifference") else "a product of such values"
        return (
            f"{op_type} of values up to {_g(largest)}: past {_g(SQUARE_LIMIT)} {what} overflows float32",
            True,
        )
    spans = ", ".join(f"input {r.index} in [{_g(r.low)}, {_g(r.high)}]" for r in ranges)
    return f"{op_type} with {spans}", False


def input_ranges(
    fn: Callable[[], Any], names: Iterable[str], compiled: bool = False
) -> dict[str, list[InputRange]]:
    """Run the step forward once, traced, and return the ranges of the float inputs of the
    ops called ``names`` in its outer graph (a fresh trace of the same step names its ops alike).
    ``compiled``: run it as a compiled step runs, with Grappler's fused kernels; else as
    its eager ops run, one kernel each (:func:`~tfviz.engine.trace.no_graph_rewrites`)."""
    import tensorflow as tf

    from tfviz.engine.trace import as_value, autograph

    wanted = set(names)
    keys: list[tuple[str, int]] = []
    converted = autograph(fn)

    def body() -> Any:
        as_value(converted())
        stats = []
        for op in tf.compat.v1.get_default_graph().get_operations():
            if op.name not in wanted:
                continue
            for i, t in enumerate(op.inputs):
                if not t.dtype.is_floating:
                    continue
                v = tf.reshape(tf.cast(t, tf.float32), [-1])
                low, high = tf.reduce_min(v), tf.reduce_max(v)
                # min and max may pass over a NaN: a range with one is no range
                nan = tf.constant(math.nan)
                whole = tf.reduce_all(tf.math.is_finite(v))
                low, high = tf.where(whole, low, nan), tf.where(whole, high, nan)
                stats.append(tf.stack([low, high, tf.reduce_min(tf.abs(v))]))
                keys.append((op.name, i))
        return tf.stack(stats) if stats else tf.zeros([0, 3])

    with _as_run(compiled):
        values = tf.function(body, autograph=False)().numpy().tolist()
    out: dict[str, list[InputRange]] = {}
    for (name, i), (low, high, tiniest) in zip(keys, values):
        out.setdefault(name, []).append(InputRange(i, low, high, tiniest))
    return out


@dataclass
class Origin:
    """Where the forward pass first holds a NaN or infinite value: the op that made it, with
    its inputs' ranges; or a value the step was handed (``data``: how many of its values
    are not finite, of how many)."""

    op: str
    ranges: list[InputRange]
    data: tuple[int, int] | None = None


def forward_origin(fn: Callable[[], Any], compiled: bool = False) -> Origin | None:
    """The first op of the step's forward pass whose float inputs are all finite and whose
    output is not (the op that made the NaN), or the first value it was handed (a captured
    tensor, an argument) that holds one; None if there is none. A trace lists its ops in
    the order they were made, so inputs come before their users. ``compiled``: as for
    :func:`input_ranges`."""
    import tensorflow as tf

    from tfviz.engine.trace import as_value, autograph

    converted = autograph(fn)
    ops: list[Any] = []

    def body() -> Any:
        as_value(converted())
        flags, counts = [], []
        for op in tf.compat.v1.get_default_graph().get_operations():
            outs = [t for t in op.outputs if t.dtype.is_floating]
            if not outs or op.type in ("ReadVariableOp", "VarHandleOp"):
                continue
            finite = [tf.reduce_all(tf.math.is_finite(t)) for t in outs]
            if op.type in ("Const", "Placeholder"):  # a value the step was handed
                ins = []
                bad = tf.add_n([tf.math.count_nonzero(~tf.math.is_finite(t)) for t in outs])
                size = tf.add_n([tf.size(t, out_type=tf.int64) for t in outs])
            else:
                ins = [tf.reduce_all(tf.math.is_finite(t)) for t in op.inputs if t.dtype.is_floating]
                bad = size = tf.constant(0, tf.int64)
            flags.append(
                tf.logical_and(
                    tf.reduce_all(tf.stack(ins)) if ins else tf.constant(True),
                    tf.logical_not(tf.reduce_all(tf.stack(finite))),
                )
            )
            counts.append(tf.stack([bad, size]))
            ops.append(op)
        if not flags:
            return tf.zeros([0], tf.bool), tf.zeros([0, 2], tf.int64)
        return tf.stack(flags), tf.stack(counts)

    with _as_run(compiled):
        made, sizes = (t.numpy().tolist() for t in tf.function(body, autograph=False)())
    first = next(((op, n) for op, bad, n in zip(ops, made, sizes) if bad), None)
    if first is None:
        return None
    op, (bad, total) = first
    if op.type in ("Const", "Placeholder"):
        return Origin(op.name, [], (bad, total))
    return Origin(op.name, input_ranges(fn, [op.name], compiled).get(op.name, []))


def _as_run(compiled: bool) -> contextlib.AbstractContextManager[None]:
    from tfviz.engine.trace import no_graph_rewrites

    return contextlib.nullcontext() if compiled else no_graph_rewrites()


def non_finite_arguments(fn: Any, replica: int = 0) -> list[str]:
    """The values a replayed step was handed that hold NaN or infinite values, each as
    ``name (k of n values)``: a step call's arguments (``fn.fn(*fn.args, **fn.kwargs)``), or
    the names a replayed tape block reads from its frame (``fn.code`` in ``fn.namespace``).
    Of a value distributed over a strategy's replicas, replica ``replica``'s part (the one
    replayed). Variables are not data: their NaN is the weights'."""
    import inspect

    import numpy as np
    import tensorflow as tf

    args, kwargs = getattr(fn, "args", None), getattr(fn, "kwargs", None) or {}
    namespace, code = getattr(fn, "namespace", None), getattr(fn, "code", None)
    if isinstance(args, tuple):
        try:
            params = list(inspect.signature(fn.fn).parameters)
        except (TypeError, ValueError, AttributeError):
            params = []
        named = [(params[i] if i < len(params) else f"argument {i + 1}", a) for i, a in enumerate(args)]
        named += list(kwargs.items())
    elif isinstance(namespace, dict) and isinstance(code, types.CodeType):
        named = [(n, namespace[n]) for n in _names_read(code) if n in namespace]
    else:
        return []
    out = []

    def local(x: Any) -> Any:
        parts = getattr(x, "values", None) if isinstance(x, tf.distribute.DistributedValues) else None
        return parts[replica] if isinstance(parts, tuple) and replica < len(parts) else x

    for name, value in named:
        if isinstance(value, (types.ModuleType, type)) or callable(value):
            continue
        try:
            value = tf.nest.map_structure(local, value)
            flat = tf.nest.flatten(value, expand_composites=True)
        except Exception:  # noqa: BLE001 - an object tf.nest cannot walk holds no batch
            continue
        bad = total = 0
        for t in flat:
            if isinstance(t, tf.Variable):
                continue
            if isinstance(t, np.ndarray) or (tf.is_tensor(t) and hasattr(t, "numpy")):
                array = np.asarray(t)
                if np.issubdtype(array.dtype, np.floating):
                    bad += int(np.count_nonzero(~np.isfinite(array)))
                    total += array.size
        if bad:
            out.append(f"{name} ({bad:,} of {total:,} values)")
    return out


def _names_read(code: types.CodeType, assigned: set[str] | None = None, nested: bool = False) -> list[str]:
    """The names ``code`` and the functions it defines read before it assigns them, in
    order, once each: what the step is handed. A name the step itself assigns first (its
    ``loss = ...``, read by ``tape.gradient(loss, ...)`` after) holds, when the block is
    replayed, what the program's previous step left there, which is no input of this one.

    >>> _names_read(compile("loss = f(x)\\ng = grad(loss, w)\\ny = [loss * v for v in vs]", "<s>", "exec"))
    ['f', 'x', 'grad', 'w', 'vs']
    """
    import dis

    assigned = set() if assigned is None else assigned
    out: dict[str, None] = {}
    for ins in dis.get_instructions(code):
        if ins.opname in _STORES:
            assigned.add(ins.argval)
        elif ins.opname in _LOADS and ins.argval not in assigned:
            if nested and ins.opname == "LOAD_FAST":
                continue  # a nested function's (a comprehension's) own argument or local
            out.setdefault(ins.argval)
        elif ins.opname == "LOAD_CONST" and isinstance(ins.argval, types.CodeType):
            for name in _names_read(ins.argval, set(assigned), nested=True):
                out.setdefault(name)
    return list(out)


#: the instructions that read a name, and those that assign one
_LOADS = frozenset({"LOAD_NAME", "LOAD_GLOBAL", "LOAD_FAST", "LOAD_DEREF", "LOAD_CLASSDEREF"})
_STORES = frozenset({"STORE_NAME", "STORE_GLOBAL", "STORE_FAST", "STORE_DEREF"})


def explain_nan_inputs(
    report: Report, graph: Any, fn: Callable[[], Any], replica: int = 0, compiled: bool = False
) -> None:
    """Add to each ``nan`` problem what its op's inputs held; where the step's own arguments
    (its batch) hold NaN, say so: that is the cause, whatever op the gradient meets it at;
    where an input is already non-finite (the forward pass made the NaN, or a value the step
    was handed holds it), move the problem to where it starts (best effort: a step that cannot
    run forward again keeps the verdict as it was). ``replica``: the strategy's replica the
    step was replayed for; ``compiled``: the program runs the step as a graph, whose fused
    kernels decide how far a NaN goes (:func:`input_ranges`)."""
    problems = [p for p in report.problems if p.kind == Kind.NAN and p.op and p.op in graph]
    if problems and (data := non_finite_arguments(fn, replica)):
        _say_data(report, problems, ", ".join(data))
        return
    names = {p.op: getattr(graph.nodes[p.op].get("op"), "name", None) for p in problems}
    if not any(names.values()):
        return
    try:
        ranges = input_ranges(fn, [n for n in names.values() if n], compiled)
        carried = any(not all(r.finite for r in rs) for rs in ranges.values())
        origin = forward_origin(fn, compiled) if carried else None
    except Exception:  # noqa: BLE001 - the explanation is extra; the verdict stands without it
        return
    by_name = {getattr(d.get("op"), "name", None): nid for nid, d in graph.nodes(data=True)}
    if origin is not None and origin.data is not None:
        nid = by_name.get(origin.op)
        node = graph.nodes[nid] if nid is not None else {}
        label = node.get("label") or node.get("name") or origin.op.rsplit("/", 1)[-1]
        bad, total = origin.data
        carrying = [p for p in problems if not all(r.finite for r in ranges.get(names.get(p.op) or "", []))]
        _say_data(report, carrying, f"{label} ({bad:,} of {total:,} values)")
        problems = [p for p in problems if p not in carrying]
        origin = None
    for p in problems:
        name = names.get(p.op)
        here = ranges.get(name, []) if name else []
        if origin is not None and here and not all(r.finite for r in here) and origin.op in by_name:
            _move_to_origin(report, p, graph, by_name[origin.op], origin.ranges)
            continue
        text, overflow = domain_text(p.op_type, here)
        if not text:
            continue
        p.message = f"{p.message}. {text[0].upper()}{text[1:]}"
        if overflow:
            p.hint = OVERFLOW_HINT


def explain_non_finite_loss(
    report: Report, graph: Any, fn: Callable[[], Any], replica: int = 0, compiled: bool = False
) -> None:
    """A loss that is NaN or infinite while no gradient is (a diverging step's square past
    float32's range: TensorFlow's gradients of an infinite loss may all be finite): the
    problem is where the forward pass first becomes non-finite, said as a NaN gradient's
    origin is (:func:`explain_nan_inputs`); in the step's own data, said so. Called only
    where the loss is not finite: it runs the forward pass again."""
    if any(p.kind == Kind.NAN for p in report.problems):
        return  # a non-finite gradient's problem says where it starts already
    message = "the loss is NaN or infinite, though every gradient is finite"
    if data := non_finite_arguments(fn, replica):
        problem = Problem(Kind.NAN, Severity.ERROR, "", "", message, hint=DATA_HINT)
        report.problems.insert(0, problem)
        _say_data(report, [problem], ", ".join(data))
        report.ok = False
        return
    try:
        origin = forward_origin(fn, compiled)
    except Exception:  # noqa: BLE001 - the explanation is extra; say what is known without it
        origin = None
    by_name = {getattr(d.get("op"), "name", None): nid for nid, d in graph.nodes(data=True)}
    nid = by_name.get(origin.op) if origin is not None else None
    if origin is None or nid is None:
        report.problems.insert(0, Problem(Kind.NAN, Severity.ERROR, "", "", message, hint=OVERFLOW_HINT))
        report.ok = False
        return
    node = graph.nodes[nid]
    op_type, name = node.get("type", ""), node.get("name", nid)
    if origin.data is not None:
        bad, total = origin.data
        said = f"{message}: the value {name} holds NaN or infinite values ({bad:,} of {total:,})"
        text, overflow = "", False
    else:
        text, overflow = domain_text(op_type, origin.ranges)
        said = f"{message}: the forward pass first becomes NaN or infinite at {op_type} '{name}'" + (
            f". {text[0].upper()}{text[1:]}" if text else ""
        )
    report.problems.insert(  # the error first: a warning of the same step is its consequence
        0,
        Problem(
            Kind.NAN,
            Severity.ERROR,
            nid,
            op_type,
            said,
            source=node.get("source"),
            hint=OVERFLOW_HINT if overflow or not text else HINT[Kind.NAN],
        ),
    )
    mark_op(report.graph, nid, Kind.NAN, said)
    report.ok = False


def _say_data(report: Report, problems: list[Any], said: str) -> None:
    """The NaN is in the data the step was handed: say so at each problem and its variables."""
    for p in problems:
        p.message = (
            f"the step's input {said} holds NaN or infinite values: the data of this step"
            " itself, before any op"
        )
        p.hint = DATA_HINT
        for v in report.variables:
            if v.name in p.variables and v.kind == Kind.NAN:
                v.explanation = p.message


def _move_to_origin(report: Report, p: Any, graph: Any, nid: str, ranges: list[InputRange]) -> None:
    """The NaN is in the forward pass: name the op that made it, where it was written."""
    node = graph.nodes[nid]
    op_type = node.get("type", "")
    text, overflow = domain_text(op_type, ranges)
    label = f"{op_type} '{node.get('name', nid)}'"
    was = p.op
    p.op, p.op_type, p.source = nid, op_type, node.get("source") or p.source
    p.message = (
        f"the loss is already non-finite in the forward pass: it first becomes NaN or"
        f" infinite at {label}" + (f". {text[0].upper()}{text[1:]}" if text else "")
    )
    if overflow:
        p.hint = OVERFLOW_HINT
    for v in report.variables:
        if v.name in p.variables and v.kind == Kind.NAN:
            v.explanation, v.blocked_at = p.message, [nid]
    # the graph says what the problem says: the origin is drawn as NaN, and the op the
    # backward pass first met the NaN at says where it came from
    mark_op(report.graph, nid, Kind.NAN, p.message)
    if was != nid:
        mark_op(
            report.graph,
            was,
            Kind.NAN,
            f"the gradient here is NaN or infinite: its input is NaN in the forward pass, from {label}",
        )
