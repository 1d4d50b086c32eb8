"""Trace the target once and learn everything from that one trace.

Inside a single ``tf.function`` trace we (1) call the target under a tape,
(2) snapshot the forward graph into networkx before any gradient op exists,
and (3) ask the tape for the gradient of the loss with respect to every
variable and every tensor on a variable-to-loss path. Running the traced
function then yields TensorFlow's own graph-mode verdict (the ground truth)
and the per-tensor gradient norms in one go.
"""

from __future__ import annotations

import contextlib
import functools
import math
import types
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from tfviz.engine.gradrules import DIFFERENTIABLE
from tfviz.engine.graphbuild import OpGraph, build_op_graph
from tfviz.engine.nestednorms import nested_sources
from tfviz.report import Source
from tfviz.vocabulary import Kind


class LiveSource:
    """A tensor source the step makes itself (``interpolated`` in a gradient
    penalty, an image inside a ``tf.range`` loop): each run of the step makes
    a new one, so it stands for source ``index`` of the replayed gradient call.
    """

    def __init__(self, index: int, like: Any, watched: bool = True) -> None:
        self.index = index
        #: the step's tape watched it (``tape.watch``); a tape follows no tensor it was not told to
        self.watched = watched
        self.dtype, self.shape = like.dtype, like.shape
        try:
            self.name = like.name
        except (AttributeError, ValueError):  # an eager tensor has no name
            self.name = ""


def resolve(fn: Any, tf_vars: list[Any]) -> list[Any]:
    """``tf_vars`` with each :class:`LiveSource` replaced by the tensor the last
    run of ``fn`` (a replayed step) passed to its gradient call, ``fn.live``."""
    live = getattr(fn, "live", None) or []
    return [live[v.index] if isinstance(v, LiveSource) and v.index < len(live) else v for v in tf_vars]


def watchable(tf_vars: list[Any]) -> list[Any]:
    """What a tape can watch before the call: a live source does not exist yet
    (the replayed step watches it, and the engine's tape with it)."""
    return [v for v in tf_vars if not isinstance(v, LiveSource)]


@dataclass
class Truth:
    """What ``tape.gradient`` did: per variable (by id of its tf.Variable)."""

    grads_present: dict[int, bool] = field(default_factory=dict)
    norms: dict[int, float] = field(default_factory=dict)
    #: the gradient is present and exactly zero everywhere (a norm can underflow to 0)
    zeros: dict[int, bool] = field(default_factory=dict)
    error: BaseException | None = None
    error_op: Any = None  # the tf.Operation whose gradient raised, when known

    @property
    def raised(self) -> bool:
        return self.error is not None


@dataclass
class Trace:
    og: OpGraph
    truth: Truth
    #: gradient norm of (node id, output index) tensors on variable paths
    tensor_norms: dict[tuple[str, int], float] = field(default_factory=dict)
    #: If/Case node id -> the branch kind it ran at these values ("then", "branch1"...)
    branch_taken: dict[str, str] = field(default_factory=dict)
    #: node id of each output a ``tf.custom_gradient`` function's gradient stands for ->
    #: that function's name and its gradient function's user line (an eager call's copy)
    custom_gradients: dict[str, tuple[str, Source | None]] = field(default_factory=dict)
    #: whether the loss the step computed is finite (None: not measured, no number)
    loss_finite: bool | None = None
    #: node id -> for each input index the tape asked about, whether the op's registered
    #: gradient function gave it a gradient (True) or None (False), as TensorFlow's own
    #: backward pass called it on the eager call (an eager call's copy; see
    #: :class:`tfviz.engine.gradrules.Prober`); and for an input the tape skipped because a
    #: stopped gradient feeds it, what the same function gave it when called once more
    #: (:meth:`tfviz.engine.eagerstream.OutputGradients._ask_skipped`)
    answered: dict[str, dict[int, bool]] = field(default_factory=dict)


def value_norms(vs: list[Any]) -> list[float | None]:
    """L2 norm of each variable's value at the step; None where one cannot be read (a
    variable not built yet, one readable only on its replicas), is not a float or is not
    finite. Each is one L2Loss op, its scalar read (:func:`read_halves`); through
    ``tf.norm`` and a float each, it cost a fifth of the judge's time.

    The gradient's size means something only against the weight's: a magnitude rule reads it.
    """
    import tensorflow as tf

    plain, read = _plain_reads()
    halves, where = [], []
    for i, v in enumerate(vs):
        try:
            # a plain variable read by its one op: through tf.convert_to_tensor's registry
            # (and Keras' wrapper) a read cost three times the L2Loss
            value = read(v.handle, v.dtype) if type(v) is plain else tf.convert_to_tensor(v)
            if value.dtype.is_integer or value.dtype == tf.bool:
                continue
            halves.append(sq_norm_of(value))
        except (ValueError, TypeError, RuntimeError, tf.errors.OpError):
            continue
        where.append(i)
    out: list[float | None] = [None] * len(vs)
    for i, norm in zip(where, read_halves(halves)):
        out[i] = norm if math.isfinite(norm) else None
    return out


#: an eager float tensor in the CPU's memory is measured in NumPy (:func:`sq_norm_of`), in
#: slices of at most this many elements, each summed in its own dtype and the slices' sums
#: in float64 (the norm within 1e-5 of the op's: one float32 dot product over a million
#: elements drifts further)
SLICE_ON_CPU = 1 << 16
#: TensorFlow's float32 and float64, as an eager tensor's ``_datatype_enum()`` says them
_FLOAT32_64 = (1, 2)


def sq_norm_of(g: Any) -> Any:
    """Half the squared L2 norm of a gradient (dense or IndexedSlices), as one
    L2Loss op: a ResNet-sized graph needs thousands of these, so each costs one op. An eager
    one in the CPU's memory is measured in NumPy and comes back as a float: for a small one an
    eager op and the read of its scalar cost ten times the dot product, and for a large
    one the op's sum took 2 to 6 times NumPy's (ResNet50's activations' gradients).

    The norm is not finite exactly where the gradient holds a NaN or an infinity, as
    TensorFlow's gradient is then not finite: a finite gradient's square sum past float32's
    range (values past 1.8e19, as a diverging step's are) is summed in float64, for an
    overflow of the measure is no NaN of the gradient. The op sums in float64 for that
    (a float32 gradient is cast first); NumPy sums in the gradient's dtype and, where that
    overflows, again in float64 (:func:`_on_cpu`)."""
    import tensorflow as tf

    on_cpu = _on_cpu(g)
    if on_cpu is not None:
        return on_cpu
    values = dense_values(g)
    if values.dtype.is_complex:
        values = tf.math.abs(values)
    if values.dtype != tf.float64:
        values = tf.cast(values, tf.float64)
    eagerly, l2_loss = _eager_l2_loss()
    if eagerly():
        return l2_loss(values)
    return graph_op("L2Loss", [values], values.dtype, T=values.dtype)


def _on_cpu(g: Any) -> float | None:
    """Half the squared norm of ``g``, read in NumPy where it is a float32 or float64 eager
    tensor in the CPU's memory (a view of its buffer, summed in its own dtype slice by slice);
    else None. ``np.vdot`` sums as ``ndarray.dot`` does (the same BLAS call), but checks no
    floating-point status: an overflow to inf needs no ``np.errstate`` around each of a
    model's thousands of gradients (a microsecond each, more than a small one's sum). Where
    the sum is not finite, the values are read once more: a finite gradient is summed again
    in float64 (:func:`_finite_half`), only a NaN or an infinity among them leaves it so."""
    if (
        type(g) is not _eager_tensor_type()
        or g._datatype_enum() not in _FLOAT32_64
        or not g.device.endswith("CPU:0")
    ):
        return None
    vdot = _vdot()
    flat = g._numpy().reshape(-1)
    if flat.size <= SLICE_ON_CPU:
        half = float(vdot(flat, flat)) / 2.0
    else:
        total = 0.0
        for start in range(0, flat.size, SLICE_ON_CPU):
            part = flat[start : start + SLICE_ON_CPU]
            total += float(vdot(part, part))
        half = total / 2.0
    return half if math.isfinite(half) else _finite_half(flat, half)


def _finite_half(flat: Any, half: float) -> float:
    """``half``, the float32 or float64 sum of ``flat``'s squares that is not finite: summed
    again in float64 where every value is finite (the float32 sum overflowed), slice by slice
    (a float64 copy of a slice at a time, not of the whole)."""
    import numpy as np

    if not np.isfinite(flat).all():
        return half
    total = 0.0
    for start in range(0, flat.size, SLICE_ON_CPU):
        part = flat[start : start + SLICE_ON_CPU].astype(np.float64)
        total += float(np.dot(part, part))
    return total / 2.0


@functools.cache
def _vdot() -> Callable[[Any, Any], Any]:
    import numpy as np

    return cast("Callable[[Any, Any], Any]", np.vdot)


@functools.cache
def _eager_tensor_type() -> Any:
    from tensorflow.python.framework import ops

    return ops.EagerTensor


@functools.cache
def _plain_reads() -> tuple[Any, Callable[[Any, Any], Any]]:
    """TensorFlow's plain resource variable class, and its generated read op."""
    from tensorflow.python.ops import gen_resource_variable_ops, resource_variable_ops

    return resource_variable_ops.ResourceVariable, gen_resource_variable_ops.read_variable_op


@functools.cache
def _eager_l2_loss() -> tuple[Callable[[], bool], Callable[[Any], Any]]:
    """TensorFlow's own test for eager execution and its generated L2Loss, reached once:
    ``tf.raw_ops``' argument handling and the ``tf`` module's lookups cost half as much as
    the op, for each of a model's thousands of gradients."""
    from tensorflow.python.eager import context
    from tensorflow.python.ops import gen_nn_ops

    return context.executing_eagerly, gen_nn_ops.l2_loss


def graph_op(op_type: str, inputs: list[Any], out: Any, **attrs: Any) -> Any:
    """An op's one output, the op made straight in the graph being traced: ``tf.raw_ops``'
    Python argument handling costs as much as the op itself, and a big model's trace makes
    thousands of these (``attrs``: dtypes, or bools)."""
    import tensorflow as tf
    from tensorflow.core.framework import attr_value_pb2

    values = {
        k: attr_value_pb2.AttrValue(b=v)
        if isinstance(v, bool)
        else attr_value_pb2.AttrValue(type=v.as_datatype_enum)
        for k, v in attrs.items()
    }
    graph = tf.compat.v1.get_default_graph()
    return graph._create_op_internal(op_type, inputs, dtypes=[out], attrs=values).outputs[0]


def shared_norms(grads: list[Any]) -> list[Any]:
    """:func:`sq_norm_of` each gradient, once per gradient tensor: TensorFlow hands the same
    tensor to both inputs of an add (a residual block) and through an identity, and each
    norm op costs its share of the trace."""
    made: dict[int, Any] = {}
    halves = []
    for g in grads:  # ``grads`` holds each one, so its id stays its own
        half = made.get(id(g))
        if half is None:
            half = made[id(g)] = sq_norm_of(g)
        halves.append(half)
    return halves


def read_halves(halves: list[Any]) -> list[float]:
    """Norms from eager half squared norms (or floats, :func:`sq_norm_of`), each read on
    its own: a read of a scalar costs 2 microseconds, where stacking thousands of them
    first made TensorFlow build a kernel for each new count of inputs (0.1 s each)."""
    return [math.sqrt(2.0 * (h if isinstance(h, float) else float(h.numpy()))) for h in halves]


def stacked_norms(halves: list[Any]) -> Any:
    """Norms from half squared norms, stacked per dtype, in input order."""
    import tensorflow as tf

    if not halves:
        return tf.zeros([0], tf.float64)
    groups: dict[Any, list[int]] = {}
    for i, h in enumerate(halves):
        groups.setdefault(h.dtype, []).append(i)
    parts, order = [], []
    for idx in groups.values():
        parts.append(tf.cast(tf.stack([halves[i] for i in idx]), tf.float64))
        order.extend(idx)
    merged = tf.concat(parts, 0)
    inverse = [0] * len(order)
    for pos, i in enumerate(order):
        inverse[i] = pos
    return tf.sqrt(2.0 * tf.gather(merged, inverse))


def raising_op(exc: BaseException) -> Any:
    """The op whose gradient function raised, found in the traceback's locals."""
    from tensorflow.python.framework import ops as tf_ops

    tb = exc.__traceback__
    found = None
    while tb is not None:
        op = tb.tb_frame.f_locals.get("op")
        if isinstance(op, tf_ops.Operation):
            found = op
        tb = tb.tb_next
    return found


def autograph(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` converted the way tf.function converts it (Python ifs on tensors...)."""
    from tensorflow.python.autograph.core import ag_ctx
    from tensorflow.python.autograph.impl import api as ag_api

    if not isinstance(fn, types.FunctionType):
        return fn
    converted: Callable[..., Any] = ag_api.tf_convert(
        fn, ag_ctx.ControlStatusCtx(status=ag_ctx.Status.ENABLED)
    )
    return converted


#: Op types whose gradient can differ eagerly and inside tf.function: a cond or loop (zeros
#: in a graph where eagerly there is None, a branch eagerly not taken) and Python code.
EAGER_MAY_DIFFER = frozenset(
    {
        "If",
        "StatelessIf",
        "While",
        "StatelessWhile",
        "Case",
        "StatelessCase",
        "EagerPyFunc",
        "PyFunc",
        "PyFuncStateless",
    }
)


class _TapeForwardError(Exception):
    """The forward call itself raised because a tape was watching."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.exc = exc


def trace(
    fn: Callable[..., Any],
    tf_vars: list[Any],
    link_variables: Callable[[OpGraph, Any], set[str]],
    unwatched: Collection[int] = (),
    compiled: bool = False,
) -> Trace:
    """Trace ``fn`` with gradients; ``link_variables`` adds variable nodes and
    returns the nodes on any variable-to-target path. The variables of ``unwatched`` (ids)
    are not watched, as the step's own tape did not watch them (``trainable=False``).
    ``compiled``: the program runs the step as a graph, so a NaN or infinite value is
    judged as its optimised graph computes it.

    Calling a nested tf.function while a tape watches builds its gradient
    right away, so a broken gradient can raise in the forward call. Then
    that error is TensorFlow's verdict and we trace again without a tape to
    get the forward graph.
    """

    try:
        return _trace_once(fn, tf_vars, link_variables, taped=True, unwatched=unwatched, compiled=compiled)
    except _TapeForwardError as err:
        traced = _trace_once(fn, tf_vars, link_variables, taped=False)
        traced.truth = Truth(error=err.exc, error_op=raising_op(err.exc))
        return traced


def _trace_once(
    fn: Callable[..., Any],
    tf_vars: list[Any],
    link_variables: Callable[[OpGraph, Any], set[str]],
    taped: bool,
    unwatched: Collection[int] = (),
    compiled: bool = False,
) -> Trace:
    import tensorflow as tf

    state: dict[str, Any] = {}
    converted = autograph(fn)

    def body() -> Any:
        if taped:
            try:
                with tf.GradientTape(watch_accessed_variables=False) as tape:
                    tape.watch([v for v in watchable(tf_vars) if id(v) not in unwatched])
                    loss = as_value(converted())
            except Exception as exc:
                if raising_op(exc) is None:
                    raise
                raise _TapeForwardError(exc) from None
        else:
            loss = as_value(converted())
        if not tf.is_tensor(loss):
            loss = tf.convert_to_tensor(loss)
        fg = tf.compat.v1.get_default_graph()
        og = build_op_graph(fg, loss)
        state["custom"] = graph_custom_gradients(og)
        mark_outside_tape(og, getattr(fn, "outside_tape", ()))
        mark_read_outs(og, getattr(fn, "read_outs", None))
        state["og"] = og
        region = link_variables(og, fg)
        if not taped or loss.dtype.name not in DIFFERENTIABLE:
            return loss
        tensors, keys = path_tensors(og, region, fg)
        inner = state["inner"] = nested_sources(og, region, fg)
        tensors, keys = tensors + inner.tensors, keys + inner.keys
        try:
            grads = tape.gradient(loss, resolve(fn, tf_vars) + tensors)
        except Exception as exc:  # noqa: BLE001 - TensorFlow's verdict, kept as data
            state["error"] = exc
            state["error_op"] = raising_op(exc)
            return loss
        state["present"] = [g is not None for g in grads]
        state["keys"] = keys
        halves = shared_norms([g for g in grads if g is not None])
        shared: dict[tuple[Any, int | None], tuple[Any, Any]] = {}
        nonzero = [any_nonzero(g, shared) for g in grads[: len(tf_vars)] if g is not None]
        preds = list(inner.preds.values())
        zeros = tf.logical_not(tf.stack(nonzero)) if nonzero else tf.zeros([0], tf.bool)
        return (loss, stacked_norms(halves), zeros, tf.stack(preds) if preds else tf.zeros([0], tf.int32))

    concrete = tf.function(body, autograph=False).get_concrete_function()
    with no_graph_rewrites():
        out = concrete()
    if compiled and "present" in state and not _all_finite(out):
        # Run again with Grappler's rewrites, as the program's compiled step runs: where a
        # value is NaN or infinite, a fused kernel decides how far it goes (a NaN in a Dense
        # layer's input stops at its fused Relu, which makes it 0; the unfused Relu passes
        # it on), so TensorFlow's own verdict is the optimised graph's.
        out = concrete()
    truth = Truth(error=state.get("error"), error_op=state.get("error_op"))
    tensor_norms: dict[tuple[str, int], float] = {}
    taken: dict[str, str] = {}
    if "present" in state:
        values = iter(out[1].numpy().tolist())
        zeros = iter(out[2].numpy().tolist())
        taken = state["inner"].taken(out[3].numpy().tolist())
        nv = len(tf_vars)
        for i, present in enumerate(state["present"]):
            value = next(values) if present else None
            if i < nv:
                key = id(tf_vars[i])
                truth.grads_present[key] = present
                if value is not None:
                    truth.norms[key] = value
                    truth.zeros[key] = bool(next(zeros))
            elif value is not None and state["inner"].keep(state["keys"][i - nv], taken):
                tensor_norms[state["keys"][i - nv]] = value
    return Trace(
        state["og"],
        truth,
        tensor_norms,
        taken,
        custom_gradients=state.get("custom", {}),
        loss_finite=finite_value(out[0] if isinstance(out, tuple) else out),
    )


def graph_custom_gradients(og: OpGraph) -> dict[str, tuple[str, Source | None]]:
    """The ``tf.custom_gradient`` outputs of a traced graph (the ``IdentityN`` whose gradient
    is overridden by the user's function), each with the function's name and its gradient
    function's user line, labelled as the copy of an eager call labels them."""
    from tensorflow.python.framework import ops

    found: dict[str, tuple[str, Source | None]] = {}
    for nid, data in og.g.nodes(data=True):
        op = data.get("op")
        if op is None or op.type != "IdentityN":
            continue
        try:
            name = op.get_attr("_gradient_op_type").decode()
            registered = ops._gradient_registry.lookup(name)
        except (ValueError, LookupError, AttributeError):
            continue
        grad_fn = _user_function(registered, depth=3)
        qualname = getattr(grad_fn, "__qualname__", "") or ""
        function = qualname.split(".<locals>")[0] if ".<locals>" in qualname else "custom_gradient"
        found[nid] = (function, user_gradient_line(registered))
        og.g.nodes[nid]["label"] = f"{function} (custom gradient)"
    return found


def _user_function(fn: Any, depth: int) -> Any:
    """The first function of the user's own that ``fn`` closes over, ``depth`` closures deep."""
    from tfviz.script.sourcemap import is_user_file

    code = getattr(fn, "__code__", None)
    if code is not None and is_user_file(code.co_filename):
        return fn
    if depth == 0 or code is None:
        return None
    cells = list(zip(code.co_freevars, getattr(fn, "__closure__", None) or ()))
    cells.sort(key=lambda named: named[0] != "grad_fn")  # the user's gradient function first
    for _, cell in cells:
        try:
            held = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
        if callable(held) and (found := _user_function(held, depth - 1)) is not None:
            return found
    return None


def user_gradient_line(backward: Any) -> Source | None:
    """The user's line of the gradient function behind ``backward``, the function
    ``tf.custom_gradient`` records for the tape (or registers for a graph), which holds the
    user's ``grad`` among the variables it closes over, a closure or two deep."""
    from tfviz.script.sourcemap import code_at

    held = _user_function(backward, depth=3)
    code = getattr(held, "__code__", None)
    if code is None:
        return None
    line = code.co_firstlineno
    return Source(file=code.co_filename, line=line, code=code_at(code.co_filename, line))


def finite_value(value: Any) -> bool | None:
    """Whether every element of ``value`` (a tensor, an array, a number) is finite; None for
    what is no floating-point number (an integer loss has no NaN, a string no value)."""
    import numpy as np

    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    if not np.issubdtype(array.dtype, np.floating) and not np.issubdtype(array.dtype, np.complexfloating):
        return None
    return bool(np.all(np.isfinite(array)))


def _all_finite(out: Any) -> bool:
    """The traced step's loss and every norm it measured are finite."""
    import numpy as np

    try:
        return all(bool(np.all(np.isfinite(np.asarray(t)))) for t in (out[0], out[1]))
    except TypeError:  # a loss that is no number (a string) has no NaN
        return True


@contextlib.contextmanager
def no_graph_rewrites() -> Iterator[None]:
    """Run our one-off function without Grappler: optimising a graph of tens of
    thousands of ops takes longer than running it once; and it computes as the eager
    ops do, one kernel each (no fused kernel decides how far a NaN goes)."""
    import tensorflow as tf

    old = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": False, **old})


def mark_outside_tape(og: OpGraph, outside: Any) -> None:
    """Cut the inputs of ops the step made while its tape did not record.

    ``outside`` holds ``(id(graph), op name)`` pairs from the replay: a model
    called before the step's ``with tf.GradientTape()`` opened gives its
    variables no gradient, however the graph connects them.
    """
    if not outside:
        return
    g = og.g
    for nid, data in g.nodes(data=True):
        op = data.get("op")
        if op is None or (id(op.graph), op.name) not in outside:
            continue
        for u in g.predecessors(nid):
            g.edges[u, nid].update(
                status=Kind.OUTSIDE_TAPE,
                status_fixed=True,
                message=f"{op.type} runs while the step's tape does not record",
            )


def mark_read_outs(og: OpGraph, read: Mapping[tuple[int, str], tuple[str, Source | None]] | None) -> None:
    """Note on each op whose output the step's own code read out into Python (``.numpy()``,
    ``float()``), keyed by ``(id(graph), op name)``, how it was read and at which user's line:
    what Python computes from it is a new constant to the tape, and a verdict on values that
    end at that op says so (``read_out``)."""
    if not read:
        return
    for data in og.g.nodes.values():
        op = data.get("op")
        if op is not None and (hit := read.get((id(op.graph), op.name))) is not None:
            data["read_out"] = hit


def path_tensors(og: OpGraph, region: set[str], fg: Any) -> tuple[list[Any], list[tuple[str, int]]]:
    """Float tensors of the outer graph on a variable-to-target path."""
    tensors, keys = [], []
    for nid in sorted(region):
        node = og.g.nodes[nid]
        op = node.get("op")
        if op is None or node.get("group") or op.graph is not fg:
            continue
        for i, t in enumerate(op.outputs):
            if t.dtype.name in DIFFERENTIABLE and t.dtype.name not in ("resource", "variant"):
                tensors.append(t)
                keys.append((nid, i))
    return tensors, keys


def any_nonzero(g: Any, shared: dict[tuple[Any, int | None], tuple[Any, Any]] | None = None) -> Any:
    """A bool tensor: some element of the gradient is not 0 (a NaN is not 0).

    Two raw ops, NotEqual and Any, with the 0 and the axes taken from ``shared`` (one per
    dtype and rank in a graph): a model's trace needs one per variable, and
    ``count_nonzero`` built six ops each through Python wrappers, which cost more than
    tracing the model itself."""
    import tensorflow as tf

    values = dense_values(g)
    key = (values.dtype, values.shape.rank)
    made = shared.get(key) if shared is not None else None
    if made is None:
        rank = values.shape.rank
        made = (tf.zeros([], values.dtype), tf.range(rank) if rank is not None else tf.range(tf.rank(values)))
        if shared is not None and rank is not None:
            shared[key] = made
    zero, axes = made
    if tf.executing_eagerly():
        return tf.raw_ops.Any(input=tf.raw_ops.NotEqual(x=values, y=zero), axis=axes)
    differs = graph_op("NotEqual", [values, zero], tf.bool, T=values.dtype, incompatible_shape_error=True)
    return graph_op("Any", [differs, axes], tf.bool, Tidx=axes.dtype, keep_dims=False)


def dense_values(g: Any) -> Any:
    """The rows a gradient really adds to its variable: a sparse gradient
    (``IndexedSlices`` from an ``Embedding`` or ``tf.gather``) repeats an index
    once per lookup, and the optimizer sums those rows before applying them."""
    import tensorflow as tf

    if not isinstance(g, tf.IndexedSlices):
        return g
    unique, position = tf.unique(tf.reshape(g.indices, [-1]))
    return tf.math.unsorted_segment_sum(g.values, position, tf.shape(unique)[0])


def as_value(loss: Any) -> Any:
    """A target that returns a variable means its value: read it here, while
    the tape still records, as ``tape.gradient(v, ...)`` would."""
    import tensorflow as tf

    value = getattr(loss, "value", None) if hasattr(loss, "path") and not tf.is_tensor(loss) else None
    if value is not None:  # a Keras variable
        loss = value
    if isinstance(loss, tf.Variable):
        return tf.convert_to_tensor(loss)
    return loss


def eager_truth(tape: Any, loss: Any, tf_vars: list[Any], fn: Any = None) -> Truth:
    """TensorFlow's eager verdict from the tape that watched the first call
    (of ``fn``, whose live sources it differentiates)."""
    truth = Truth()
    try:
        grads = tape.gradient(loss, resolve(fn, tf_vars))
    except Exception as exc:  # noqa: BLE001
        truth.error = exc
        truth.error_op = raising_op(exc)
        return truth
    norms = read_norms(grads)
    for v, g, norm, some in zip(tf_vars, grads, norms, nonzero_flags(grads, norms)):
        truth.grads_present[id(v)] = g is not None
        if norm is not None:
            truth.norms[id(v)] = norm
            truth.zeros[id(v)] = not some
    return truth


def nonzero_flags(grads: list[Any], norms: list[float | None]) -> list[bool]:
    """Whether each gradient has an element that is not 0 (False for None), given their
    :func:`read_norms`. A norm that is not 0 (NaN included) says so already; only where it
    is 0 are the elements compared, for a norm of tiny values underflows to 0. Those are
    read at once: a read of one small tensor costs as much as the op that made it.

    >>> nonzero_flags([None, "g"], [None, 2.5])
    [False, True]
    """
    unsure = [i for i, (g, n) in enumerate(zip(grads, norms)) if g is not None and n == 0.0]
    flags = [g is not None for g in grads]
    if unsure:
        import tensorflow as tf

        shared: dict[tuple[Any, int | None], tuple[Any, Any]] = {}
        found = tf.stack([any_nonzero(grads[i], shared) for i in unsure]).numpy().tolist()
        for i, some in zip(unsure, found):
            flags[i] = bool(some)
    return flags


def read_norms(grads: list[Any]) -> list[float | None]:
    """Each gradient's L2 norm (None for no gradient): one L2Loss op for each gradient
    tensor (:func:`shared_norms`), its scalar read (:func:`read_halves`)."""
    present = [g for g in grads if g is not None]
    found = iter(read_halves(shared_norms(present)))
    return [next(found) if g is not None else None for g in grads]
