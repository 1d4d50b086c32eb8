"""The step's graph from the ops it runs eagerly, not from a second, traced run.

Tracing a target into a ``tf.function`` costs several times its eager run (every op is
built in Python, then its symbolic gradient, then the function), so on a large model
tfviz's cost grew faster than the script's own. Here an op callback copies each op the
eager call runs as it runs: the same op type, attributes and inputs, under the name scope
the op ran in, with the user's line, held as data (:mod:`tfviz.engine.copiedgraph`; a
graph op is made only of each signature whose gradient is probed). The copy is what a
trace would hold, unrolled: Python control flow ran once, as it did for the user. The gradients
then come from the call's own tape, in the one backward pass the script makes for its
variables: TensorFlow's eager verdict itself. The gradients of the tensors on their paths
are measured as that pass hands them to each op's gradient function
(:class:`OutputGradients`), never held.

What a graph copied op by op cannot stand for refuses the stream (:attr:`Stream.refused`),
and the caller traces instead: a ``tf.function`` called or traced inside the target (its
body is a graph the stream never sees), an op whose attributes hold a function, an op
type the registry does not know.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

from tfviz.engine.copiedgraph import CopiedGraph
from tfviz.engine.fastpath import reads_in_python
from tfviz.engine.gradrules import DIFFERENTIABLE
from tfviz.engine.graphbuild import OpGraph, build_op_graph
from tfviz.engine.origins import CAPTURED, COPIED, NOT_COPIED
from tfviz.engine.trace import (
    EAGER_MAY_DIFFER,
    Trace,
    Truth,
    mark_outside_tape,
    mark_read_outs,
    nonzero_flags,
    path_tensors,
    raising_op,
    read_halves,
    resolve,
    sq_norm_of,
    user_gradient_line,
)
from tfviz.report import Source
from tfviz.script.sourcemap import op_user_source, reading_user_line
from tfviz.vocabulary import READ_OUT_AS

#: a tensor of the copy: (op name, output index)
Key = tuple[str, int]

#: Whether the copy holds every eager tensor the call made until it lets go of them
#: (:meth:`Stream.release`). It holds them by weak reference, as the script's own call
#: holds nothing beyond what the tape keeps, and holds strongly only those a backward pass
#: may ask about as sources (:func:`_watched_or_asked`). Holding them all kept every
#: activation alive through the forward pass (the process's peak grew 400 MB in a first
#: ResNet50 check at batch 8, against 11 MB now), and that memory, let go at once before
#: the backward pass, was taken afresh from the system there, a page fault per 4 KB
#: (``tests/bench/bench_check_memory.py``). Holding them all, so that every path tensor
#: can be asked for as a source, is the slow twin (``tests/test_eagerstream.py``); a
#: lenient stream holds them all too.
HOLD_EVERY_OUTPUT = False
#: the kinds of attribute value an op copied into the graph can carry
_LIST_KINDS = {"list(type)": "type", "list(int)": "i", "list(float)": "f", "list(bool)": "b"}


class Stream:
    """Copies the eager ops run while it is entered into :attr:`graph`.

    Each eager tensor an op makes stands for its copy's output; one that no copied op
    made (a variable's handle, an input, a constant) is captured as a placeholder, as a
    trace captures it, so the linker finds variables and frozen copies by their handles.
    """

    def __init__(self, lenient: bool = False) -> None:
        #: copy what a trace could run otherwise too (Python code, control flow, values read
        #: out): for drawing a step that cannot be traced, whose verdict is its eager run's
        self.lenient = lenient
        self.graph = CopiedGraph("tfviz_eager_step")
        #: why the stream cannot stand for a trace; None while it can
        self.refused: str | None = None
        #: inside TensorFlow's constant folding, whose value reads a trace makes too
        self.folding = 0
        #: id(eager tensor) -> a weak reference to it and its graph tensor: an id stands for
        #: the tensor only while it lives (the copy does not keep the call's tensors alive)
        self._graph_of: dict[int, tuple[Callable[[], Any], Any]] = {}
        #: op name -> a weak reference to each eager output it stands for
        self._eager_of: dict[str, list[Callable[[], Any]]] = {}
        #: op name -> its eager outputs, held: those a backward pass may ask about as sources
        #: (:func:`_watched_or_asked`), or all of them (:data:`HOLD_EVERY_OUTPUT`)
        self._kept: dict[str, list[Any]] = {}
        self._hold_all = lenient or HOLD_EVERY_OUTPUT
        #: id of an attribute tuple -> the first copied op the tape handed it for
        self._first_holder: dict[int, str] = {}
        #: while set, the call's lineage, for the origin recorder, in the order it ran
        #: (:data:`tfviz.engine.origins.CAPTURED`): the captures, the ops copied, and the
        #: ops not copied, whose tensors it holds
        self.lineage: list[tuple[Any, ...]] | None = None
        self._attr_kinds: dict[str, dict[str, str]] = {}
        self._grouped: dict[str, bool] = {}  # op type -> whether its inputs include lists
        self._attr_cache: dict[tuple[str, Any], tuple[dict[str, bytes], dict[str, Any] | None]] = {}
        #: op name -> the attribute tuple its eager call handed the tape: the tape hands
        #: the same tuple to the op's gradient function, which is how a backward pass
        #: tells which copied op it differentiates (:class:`OutputGradients`)
        self.attrs_of: dict[str, tuple[Any, ...]] = {}
        #: (op name, output) of tensors a Python backward function stands for
        #: (``tf.custom_gradient``): their gradients never pass an op's gradient function
        self.python_backward: set[Key] = set()
        #: op name of each such output -> the tf.custom_gradient function's name and its
        #: gradient function's user line, to name it where it returns no gradient
        self.custom_gradients: dict[str, tuple[str, Source | None]] = {}
        #: op name -> the user's line that ran it, read off the stack as it ran
        self.sources: dict[str, Source | None] = {}
        #: (id of the copy's graph, op name) -> how Python first read the op's output out
        #: (:data:`~tfviz.vocabulary.READ_OUT_AS`) and the user's line that read it
        self.read_outs: dict[tuple[int, str], tuple[str, Source | None]] = {}
        #: the copy of the op whose Python backward function (tf.custom_gradient) raised
        self.raised_in: Any = None
        #: inside a Keras ``predict()``: its ops are not the target's (it hands back NumPy,
        #: which the copy then captures as a value from outside, as a trace would)
        self.suspended = 0
        #: what else lets go of the call's tensors when the copy does (:meth:`release`)
        self.on_release: list[Callable[[], None]] = []

    def __enter__(self) -> Stream:
        from tensorflow.python import pywrap_tfe
        from tensorflow.python.eager import context, record
        from tensorflow.python.framework import op_callbacks, ops

        self._context = context.context()
        self._patched: list[tuple[Any, str, Any]] = []
        self._patch(pywrap_tfe, "TFE_Py_FastPathExecute", reads_in_python)
        self._patch(ops, "name_scope", _named_eagerly)
        self._patch(record, "record_operation", self._noting_python_backward)
        _watch_values(self)
        _watch_folding(self)
        _watch_control_flow(self)
        _watch_python_functions(self)
        _watch_predict(self)
        op_callbacks.add_op_callback(self._callback)
        return self

    def __exit__(self, *exc: Any) -> None:
        from tensorflow.python.framework import op_callbacks

        op_callbacks.remove_op_callback(self._callback)
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)
        self.lineage = None

    def _patch(self, owner: Any, name: str, wrap: Callable[[Any], Any]) -> None:
        """Replace ``owner.name`` with ``wrap`` of it until the stream is left."""
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        self._patched.append((owner, name, original))
        setattr(owner, name, wrap(original))

    def refuse(self, why: str) -> None:
        """The copy cannot stand for a trace, for ``why`` (the first reason is kept); a lenient
        stream, copied only to draw a step no trace could, refuses nothing of this kind."""
        if self.refused is None and not self.lenient:
            self.refused = why

    def _noting_python_backward(self, record_operation: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(op_type: Any, outputs: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
            backward = args[0] if args else kwargs.get("backward_function")
            made = None
            for t in outputs:
                copy = self.graph_tensor(t)
                if copy is not None:
                    made = made or copy.op
                    self.python_backward.add((copy.op.name, copy.value_index))
                    self.custom_gradients[copy.op.name] = (str(op_type), user_gradient_line(backward))
                    self._keep(copy.op.name)  # asked for as a source: no gradient function sees it
            if made is not None and callable(backward):
                backward = self._naming_raiser(backward, made)
                args = (backward, *args[1:]) if args else args
                if not args:
                    kwargs["backward_function"] = backward
            return record_operation(op_type, outputs, inputs, *args, **kwargs)

        return recorded

    def _naming_raiser(self, backward: Callable[..., Any], op: Any) -> Callable[..., Any]:
        """``backward`` (a ``tf.custom_gradient``'s), noting ``op``, the copy of what it
        differentiates, when it raises: no op's gradient function is on that error's stack."""

        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return backward(*args, **kwargs)
            except Exception:
                self.raised_in = op
                raise

        return run

    def release(self) -> None:
        """Let go of the eager tensors the copy held (those a backward pass may ask about),
        so that a backward pass frees each once it is used, as the script's own does."""
        self._kept.clear()
        for let_go in self.on_release:
            let_go()

    def graph_tensor(self, t: Any) -> Any | None:
        """The graph tensor that eager tensor ``t`` stands for; None if no copied op made it."""
        hit = self._graph_of.get(id(t))
        return hit[1] if hit is not None and hit[0]() is t else None

    def eager_tensor(self, t: Any) -> Any:
        """The eager tensor graph tensor ``t`` (an output of a copied op, or a capture)
        stands for; LookupError where it is gone (one the copy did not hold)."""
        value = self._eager_of[t.op.name][t.value_index]()
        if value is None:
            raise LookupError(f"the eager tensor {t.name} is gone")
        return value

    def _keep(self, name: str) -> None:
        """Hold op ``name``'s eager outputs that are still alive until :meth:`release`."""
        if name not in self._kept:
            self._kept[name] = [ref() for ref in self._eager_of[name]]

    def _callback(
        self,
        op_type: str | bytes,
        inputs: Any,
        attrs: Any,
        outputs: Any,
        op_name: str | None = None,
        graph: Any = None,
    ) -> None:
        if self.refused is None and not self.suspended:
            kind = op_type.decode() if isinstance(op_type, bytes) else op_type
            if kind in EAGER_MAY_DIFFER and not self.lenient:
                self.refuse(f"{kind} runs Python, which a graph runs otherwise")
            elif graph is not None:
                self.refused = f"a tf.function is traced inside the target ({kind} in {graph.name})"
            else:
                try:
                    self._copy(kind, inputs or (), attrs or (), outputs or (), op_name)
                    return None
                except Exception as exc:  # noqa: BLE001 - any op the copy cannot hold: trace instead
                    self.refused = f"{kind} cannot be copied into a graph: {exc}"
        if self.lineage is not None and graph is None and outputs:  # the recorder's, its tensors held
            self.lineage.append((NOT_COPIED, inputs, outputs, op_user_source(outputs)))
        return None

    def _copy(self, kind: str, inputs: Any, attrs: Any, outputs: Any, op_name: Any) -> None:
        graph = self.graph
        values, grouping = self._attrs(kind, attrs)
        scope = self._context.scope_name or ""
        source = op_user_source(outputs)
        graph_of = self._graph_of
        ins = []
        for t in inputs:  # most are an earlier op's output: looked up here, not in _input
            hit = graph_of.get(id(t))
            ins.append(hit[1] if hit is not None and hit[0]() is t else self._input(t, kind, scope, source))
        name = op_name.decode() if isinstance(op_name, bytes) else op_name
        # named as a trace names it: a name that ends in "/" is the scope the op's Python
        # wrapper opened (tf.add(..., name="h")), any other is the op's own, in the scope
        full = name[:-1] if name and name.endswith("/") else scope + (name or kind)
        op = graph.add(graph.unique_name(full), kind, ins, outputs, (attrs, values, grouping))
        self.sources[op.name] = source
        refs: list[Callable[[], Any]] = []
        for t, copy in zip(outputs, op.outputs):
            ref: Callable[[], Any]
            try:
                ref = weakref.ref(t)
            except TypeError:  # held where it cannot be referred to weakly (:func:`_weak`)
                ref = _weak(t)
            graph_of[id(t)] = (ref, copy)
            refs.append(ref)
        self._eager_of[op.name] = refs
        if self._hold_all or not attrs:  # an op without attributes is asked as a source
            self._kept[op.name] = list(outputs)
        if attrs:
            self.attrs_of[op.name] = attrs
            first = self._first_holder.setdefault(id(attrs), op.name)
            if first != op.name:  # a tuple the tape hands for two ops: both asked as sources
                self._share(first, op.name)
        if self.lineage is not None:
            self.lineage.append((COPIED, op, refs, source))

    def _share(self, first: str, name: str) -> None:
        """Ops ``first`` and ``name`` were handed one attribute tuple, by which a gradient
        function cannot tell them apart: their outputs are asked for as sources, and held.
        Where ``first``'s are gone already (no one held them), the copy cannot ask for
        them, and refuses."""
        self._keep(name)
        if first not in self._kept:
            outputs = [ref() for ref in self._eager_of[first]]
            if any(t is None for t in outputs):
                self.refuse(
                    f"ops {first} and {name} share one attribute tuple and {first}'s outputs are gone"
                )
            else:
                self._kept[first] = outputs

    def captured(self, t: Any) -> Any:
        """Eager tensor ``t``, which no copied op made, as a value the copy holds from outside
        (a ``Const``, as a trace embeds it): a loss made of Python's numbers, ``tf.constant``
        of what NumPy computed, which runs no op."""
        return self._input(t, "", "", None, "Const")

    def _input(self, t: Any, consumer: str, scope: str, source: Source | None, named: str = "") -> Any:
        hit = self._graph_of.get(id(t))
        if hit is not None and hit[0]() is t:
            return hit[1]
        if named:
            name = named
        elif t.dtype.name == "resource":
            name = "resource"
        elif t.dtype.is_integer or t.dtype.is_bool:
            name = "Const"  # most are Python values TensorFlow made tensors of, a trace's constants
        else:
            name = f"{consumer.lower()}_input"
        placeholder = self.graph.add(self.graph.unique_name(scope + name), "Placeholder", [], [t]).outputs[0]
        self.sources[placeholder.op.name] = source  # the line of the op it is an input of
        self.graph.captures.append((t, placeholder))  # held there, as a trace holds its captures
        ref = _weak(t)
        self._graph_of[id(t)] = (ref, placeholder)
        self._eager_of[placeholder.op.name] = [ref]
        if self.lineage is not None:
            self.lineage.append((CAPTURED, placeholder, t))
        return placeholder

    def _attrs(self, kind: str, attrs: Any) -> tuple[dict[str, bytes], dict[str, Any] | None]:
        """The op's attributes as the serialized AttrValues its copy carries, and where its
        definition takes lists of inputs, the AttrValues that say how long. Most ops of a
        model repeat a few attribute tuples (a float MatMul's), so each is turned into
        protocol buffers once."""
        key: tuple[str, Any] = (kind, attrs)
        try:
            return self._attr_cache[key]
        except KeyError:
            pass
        except TypeError:  # a list among the values (a convolution's strides): keyed as a tuple
            key = (kind, tuple(tuple(v) if isinstance(v, list) else v for v in attrs))
            try:
                hit = self._attr_cache.get(key)
            except TypeError:  # a value Python cannot hash even so: made every time
                return self._make_attrs(kind, attrs)
            if hit is not None:
                return hit
        made = self._attr_cache[key] = self._make_attrs(kind, attrs)
        return made

    def _make_attrs(self, kind: str, attrs: Any) -> tuple[dict[str, bytes], dict[str, Any] | None]:
        from tensorflow.core.framework import attr_value_pb2
        from tensorflow.python.framework import op_def_registry

        kinds = self._attr_kinds.get(kind)
        if kinds is None:
            op_def = op_def_registry.get(kind)
            if op_def is None:
                raise ValueError("its op type is not registered")
            kinds = self._attr_kinds[kind] = {a.name: a.type for a in op_def.attr}
            self._grouped[kind] = any(a.number_attr or a.type_list_attr for a in op_def.input_arg)
        protos = {}
        for i in range(0, len(attrs), 2):
            name, value = attrs[i], attrs[i + 1]
            attr_kind = kinds[name]
            if value is None and attr_kind.startswith("list("):
                value = []  # eagerly an empty list may be handed over as None
            if value is not None:
                protos[name] = _attr_value(attr_value_pb2.AttrValue, attr_kind, value)
        serialized = {name: proto.SerializeToString() for name, proto in protos.items()}
        return serialized, protos if self._grouped[kind] else None


#: the ways Python reads an eager tensor's value: ``if loss > 0``, ``float(loss)``,
#: ``.numpy()``, and the conditions of ``tf.cond`` and ``tf.while_loop``, which run eagerly as
#: Python's own ``if`` and ``while``. A graph holds a cond or a loop there, or cannot be traced.
_VALUE_READS = ("__bool__", "__float__", "__int__", "__index__", "numpy", "__array__")


def _eager_tensor_class() -> Any:
    from tensorflow.python.framework import ops

    return ops._EagerTensorBase


def _watch_values(stream: Stream) -> None:
    """Refuse ``stream`` once Python reads a tensor's value."""
    cls = _eager_tensor_class()

    def refusing(name: str) -> Callable[[Any], Any]:
        def wrap(method: Any) -> Any:
            def read(self: Any, *args: Any, **kwargs: Any) -> Any:
                if not stream.folding and not stream.suspended:
                    stream.refuse(f"Python reads a tensor's value ({name}): a graph branches or stops there")
                    copy = stream.graph_tensor(self)
                    reader = reading_user_line(sys._getframe(1)) if copy is not None else None
                    if copy is not None and reader is not None:  # the step's own code read it
                        key = (id(stream.graph), copy.op.name)
                        stream.read_outs.setdefault(key, (READ_OUT_AS[name], reader))
                return method(self, *args, **kwargs)

            return read

        return wrap

    for name in _VALUE_READS:
        if name in cls.__dict__:
            stream._patch(cls, name, refusing(name))


def _refusing(stream: Stream, why: str) -> Callable[[Any], Any]:
    """A wrapper that refuses ``stream`` for ``why`` before it runs what it wraps."""

    def wrap(function: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            stream.refuse(why)
            return function(*args, **kwargs)

        return run

    return wrap


def _counting(stream: Stream, counter: str) -> Callable[[Any], Any]:
    """A wrapper that raises ``stream``'s ``counter`` by one while what it wraps runs."""

    def wrap(function: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            setattr(stream, counter, getattr(stream, counter) + 1)
            try:
                return function(*args, **kwargs)
            finally:
                setattr(stream, counter, getattr(stream, counter) - 1)

        return run

    return wrap


def _watch_folding(stream: Stream) -> None:
    """TensorFlow's own constant folding (``tensor_util.constant_value``), which reads a
    value eagerly where a trace reads it from a constant op: not a value the target reads."""
    from tensorflow.python.framework import tensor_util

    stream._patch(tensor_util, "constant_value", _counting(stream, "folding"))


def _watch_control_flow(stream: Stream) -> None:
    """Refuse ``stream`` once the target runs a ``tf.cond``, ``tf.while_loop`` or
    ``tf.switch_case``: eagerly each runs as Python, while a graph holds a cond or a loop,
    whose gradient differs (zeros for a cut path, where eagerly there is None)."""
    from tensorflow.python.ops import cond, control_flow_switch_case, while_loop

    for module, name in (
        (cond, "_eager_cond_implementation"),
        (while_loop, "while_loop"),
        (control_flow_switch_case, "_indexed_case_verify_and_canonicalize_args"),
    ):
        why = f"the target runs control flow ({name}): a graph holds a cond or a loop"
        stream._patch(module, name, _refusing(stream, why))


def _watch_predict(stream: Stream) -> None:
    """Copy nothing of a Keras ``predict()`` called inside the target: it runs a tf.function
    of its own and returns NumPy, so what the target computes from it starts at a value from
    outside, which the copy captures as a placeholder: the graph is drawn up to that cut."""
    try:
        import keras
    except ImportError:  # pragma: no cover - Keras ships with TensorFlow
        return

    for name in ("predict", "predict_on_batch"):
        # where the method is defined now: tfviz's own predict hook, if installed, is on keras.Model
        owner = next(c for c in keras.Model.__mro__ if name in c.__dict__)
        stream._patch(owner, name, _counting(stream, "suspended"))


def _watch_python_functions(stream: Stream) -> None:
    """Refuse ``stream`` once the target calls ``tf.numpy_function`` (or ``tf.compat.v1.py_func``):
    eagerly TensorFlow calls the function as plain Python, with no op for the copy to see,
    and converts what it returns into a constant; a graph holds the ``PyFunc`` op that cuts
    the gradient, which the trace names at its line."""
    from tensorflow.python.ops import script_ops

    why = "the target runs Python through tf.numpy_function: a graph holds a PyFunc op"
    stream._patch(script_ops, "py_func_common", _refusing(stream, why))


def _named_eagerly(name_scope: Callable[..., Any]) -> Callable[..., Any]:
    """TensorFlow's internal name scope, opened eagerly too: eagerly TensorFlow skips the
    scopes its op wrappers open, and with them the names users give (``tf.add(...,
    name="h")``), which a trace keeps and a user looks for."""

    def opened_eagerly(
        name: Any, default_name: Any = None, values: Any = None, skip_on_eager: bool = True
    ) -> Any:
        return name_scope(name, default_name, values, skip_on_eager=False)

    return opened_eagerly


def _weak(t: Any) -> Callable[[], Any]:
    """A weak reference to ``t``; one that holds it where it cannot be referred to weakly."""
    try:
        return weakref.ref(t)
    except TypeError:
        return lambda: t


def _attr_value(attr: Any, kind: str, value: Any) -> Any:
    """An eager op's attribute (a Python value) as the AttrValue its graph copy carries."""
    if kind == "type":
        return attr(type=getattr(value, "as_datatype_enum", value))
    if kind == "bool":
        return attr(b=value)
    if kind == "int":
        return attr(i=value)
    if kind == "float":
        return attr(f=value)
    if kind == "string":
        return attr(s=value if isinstance(value, bytes) else str(value).encode())
    if kind == "shape":
        return attr(shape=_shape(value))
    if kind == "list(shape)":
        return attr(list=attr.ListValue(shape=[_shape(v) for v in value]))
    if kind == "list(string)":
        return attr(list=attr.ListValue(s=[v if isinstance(v, bytes) else str(v).encode() for v in value]))
    field = _LIST_KINDS.get(kind)
    if field is None:
        raise ValueError(f"an attribute of kind {kind}")
    if field == "type":
        value = [getattr(v, "as_datatype_enum", v) for v in value]
    return attr(list=attr.ListValue(**{field: list(value)}))


def _shape(value: Any) -> Any:
    import tensorflow as tf

    return tf.TensorShape(value).as_proto()


def stream_trace(
    stream: Stream,
    fn: Any,
    loss: Any,
    tape: Any,
    tf_vars: list[Any],
    link_variables: Callable[[OpGraph, Any], set[str]],
    asked_again: dict[tuple[Any, ...], dict[int, bool]] | None = None,
) -> Trace | None:
    """The trace of the eager call ``stream`` copied, with the gradients of ``tape`` (which
    watched that call and has not been asked yet); None where the stream cannot stand for a
    trace, and the tape is then left unasked. ``asked_again``: the answers of gradient
    functions asked once more of the ports the tape skipped, by op signature, shared with
    earlier analyses (:data:`ASKED_AGAIN`); else this analysis asks afresh."""
    import tensorflow as tf

    if stream.refused is not None or not tf.is_tensor(loss):
        return None
    target = stream.graph_tensor(loss)
    if target is None and isinstance(loss, _eager_tensor_class()):
        # no op made the loss (tf.constant of what NumPy computed): held as a trace holds it
        target = stream.captured(loss)
    if target is None:
        return None
    og = build_op_graph(stream.graph, target, stream.sources)
    mark_read_outs(og, stream.read_outs)
    for name, (function, _) in stream.custom_gradients.items():
        if name in og.g:  # drawn as what the user wrote: the function whose gradient is theirs
            og.g.nodes[name]["label"] = f"{function} (custom gradient)"
    mark_outside_tape(og, getattr(fn, "outside_tape", ()))
    region = link_variables(og, stream.graph)
    differentiable = loss.dtype.name in DIFFERENTIABLE
    tensors, keys = path_tensors(og, region, stream.graph) if differentiable else ([], [])
    stopped = _stopped_ports(og, region)
    return _asked(og, tape, loss, resolve(fn, tf_vars), tensors, keys, stream, stopped, asked_again)


def _asked(
    og: OpGraph,
    tape: Any,
    loss: Any,
    tf_vars: list[Any],
    tensors: list[Any],
    keys: list[Key],
    stream: Stream,
    stopped: dict[str, frozenset[int]] | None = None,
    asked_again: dict[tuple[Any, ...], dict[int, bool]] | None = None,
) -> Trace | None:
    """Ask the tape for the variables' gradients, and measure the path tensors' on the way;
    None, the tape left unasked, where a tensor to ask for as a source is gone.

    A path tensor's gradient is as large as the tensor. Asked of the tape as a source,
    each is held until the backward pass ends: a second copy of every activation (a
    third of ResNet50's peak memory). So the one backward pass that gives the variables'
    gradients, the script's own, is watched instead (:class:`OutputGradients`): each
    op's gradient function is handed its outputs' gradients, whose norms are taken there
    and then. Only the few tensors no gradient function sees (a ``tf.custom_gradient``'s
    outputs) are asked as sources."""
    truth = Truth()
    tensor_norms: dict[Key, float] = {}
    watched, asked = _watched_or_asked(stream, tensors, keys)
    try:
        sources = [stream.eager_tensor(t) for t, _ in asked]
    except LookupError:  # a tensor the copy did not hold: it cannot stand for a trace
        return None
    sole = _sole_holders(stream)
    stream.release()
    seen = OutputGradients(watched, sole, stopped, stream.graph, asked_again)
    try:
        with seen:
            grads = tape.gradient(loss, tf_vars + sources)
    except Exception as exc:  # noqa: BLE001 - TensorFlow's verdict, kept as data
        truth.error = exc
        truth.error_op = raising_op(exc) or _raising_copy(exc, stream) or stream.raised_in
        return Trace(
            og, truth, tensor_norms, custom_gradients=stream.custom_gradients, answered=seen.answered
        )
    values = seen.norms_of(grads)
    nonzero = nonzero_flags(grads[: len(tf_vars)], values[: len(tf_vars)])
    for v, g, value, some in zip(tf_vars, grads, values, nonzero):
        truth.grads_present[id(v)] = g is not None
        if value is not None:
            truth.norms[id(v)] = value
            truth.zeros[id(v)] = not some
    for (_, key), value in zip(asked, values[len(tf_vars) :]):
        if value is not None:
            tensor_norms[key] = value
    tensor_norms.update(seen.norms())
    return Trace(og, truth, tensor_norms, custom_gradients=stream.custom_gradients, answered=seen.answered)


def _stopped_ports(og: OpGraph, region: set[str]) -> dict[str, frozenset[int]]:
    """For each op on the variables' paths, its float input ports fed by an op on the paths that
    TensorFlow registers as not differentiable (``tf.stop_gradient``'s): the tape records no
    gradient there and skips those ports, whose verdicts the prober would then probe (ResNet50's
    batch norms: a squared difference from a stopped mean, 9 probes in a first check)."""
    g = og.g
    out: dict[str, set[int]] = {}
    for u in region:
        if not _registered_not_differentiable(g.nodes[u].get("type")):
            continue
        for v, e in g.succ[u].items():
            if v in region and e["dtype"] in DIFFERENTIABLE:
                out.setdefault(v, set()).update(dst_in for _, dst_in in e["ports"])
    return {v: frozenset(ports) for v, ports in out.items()}


#: An op signature -> what its gradient function gave each input when asked once more, skipping
#: none (:meth:`OutputGradients._ask_skipped`), for the analyses of the process's own functions
#: (:func:`tfviz.check` on a function): as :data:`tfviz.engine.gradrules.PROBED`, the answer
#: for a signature does not change while the process lives, and a notebook that checks its
#: model again need not run those gradient functions again (ResNet50's batch norms: 9 calls on
#: its activations, 0.015 s of each check). A worker's one analysis asks afresh.
ASKED_AGAIN: dict[tuple[Any, ...], dict[int, bool]] = {}


#: op type (as a copied op names it, or as the tape hands it over: bytes) -> what
#: TensorFlow's gradient registry holds for it (:func:`_gradient_registered`)
_REGISTERED: dict[str | bytes, bool | None] = {}


def _gradient_registered(kind: str | bytes) -> bool | None:
    """True where op type ``kind`` has a gradient function, False where it is registered as
    not differentiable (``tf.stop_gradient``'s), None where nothing is registered for it."""
    if kind not in _REGISTERED:
        from tensorflow.python.framework import ops

        name = kind.decode() if isinstance(kind, bytes) else kind
        try:
            _REGISTERED[kind] = ops._gradient_registry.lookup(name) is not None
        except LookupError:
            _REGISTERED[kind] = None
    return _REGISTERED[kind]


def _registered_not_differentiable(kind: str | None) -> bool:
    return kind is not None and _gradient_registered(kind) is False


def _sole_holders(stream: Stream) -> dict[int, str]:
    """The copied op each attribute tuple stands for (by the tuple's id), where one op
    alone holds it: an op without attributes shares the empty tuple with every other."""
    out: dict[int, str] = {}
    shared: set[int] = set()
    for name, attrs in stream.attrs_of.items():
        key = id(attrs)
        if key in out:
            shared.add(key)
        out[key] = name
    for key in shared:
        del out[key]
    return out


def _watched_or_asked(
    stream: Stream, tensors: list[Any], keys: list[Key]
) -> tuple[dict[int, tuple[tuple[Any, ...], list[tuple[int, Key]]]], list[tuple[Any, Key]]]:
    """Path tensors split into those a gradient function will be handed (by the id of
    their op's attribute tuple: each output's index and key) and those to ask as sources:
    an op with no attributes, one whose tuple another op shares, a Python backward."""
    by_op: dict[str, list[tuple[Any, Key]]] = {}
    for t, key in zip(tensors, keys):  # a key is (op name, output): the copy has no nested graphs
        by_op.setdefault(key[0], []).append((t, key))
    holders: dict[int, list[str]] = {}
    for name in by_op:
        attrs = stream.attrs_of.get(name)
        if attrs is not None:
            holders.setdefault(id(attrs), []).append(name)
    watched: dict[int, tuple[tuple[Any, ...], list[tuple[int, Key]]]] = {}
    asked: list[tuple[Any, Key]] = []
    for name, outputs in by_op.items():
        attrs = stream.attrs_of.get(name)
        for t, key in outputs:
            if attrs is None or len(holders[id(attrs)]) > 1 or key in stream.python_backward:
                asked.append((t, key))
            else:
                watched.setdefault(id(attrs), (attrs, []))[1].append((key[1], key))
    return watched, asked


class OutputGradients:
    """While entered, the norm of each gradient TensorFlow hands the gradient function of
    a watched op (by the id of its attribute tuple) for a watched output.

    TensorFlow's tape calls one registered Python function for every op it differentiates
    (``backprop._gradient_function``) with the op's attributes as recorded and its outputs'
    gradients, summed over their consumers: the gradient a tape asked for that tensor would
    return. That function is wrapped while entered, and each such gradient reduced to one
    L2Loss op before the pass moves on. An output no consumer gave a gradient is handed
    over as zeros the tape makes (:attr:`_fillers`) where a tape asked for it returns None,
    so those are not measured."""

    def __init__(
        self,
        watched: dict[int, tuple[tuple[Any, ...], list[tuple[int, Key]]]],
        sole: dict[int, str] | None = None,
        stopped: dict[str, frozenset[int]] | None = None,
        graph: CopiedGraph | None = None,
        asked_again: dict[tuple[Any, ...], dict[int, bool]] | None = None,
    ) -> None:
        self._watched = watched
        #: attribute tuple's id -> the copied op that alone holds it (:func:`_sole_holders`)
        self._sole = sole or {}
        #: copied op -> its ports fed by a stopped gradient (:func:`_stopped_ports`), which the
        #: tape skips: each op's gradient function is asked of those too (:meth:`_ask_skipped`)
        self._stopped = stopped or {}
        self._graph = graph
        #: an op's signature -> what its gradient function gave each input, asked of every one
        self._full: dict[tuple[Any, ...], dict[int, bool]] = {} if asked_again is None else asked_again
        #: copied op -> each input the tape asked for -> whether its gradient function gave
        #: that input a gradient (:attr:`~tfviz.engine.trace.Trace.answered`)
        self.answered: dict[str, dict[int, bool]] = {}
        self._halves: list[Any] = []
        self._keys: list[Key] = []
        self._fillers: dict[int, Any] = {}  # id -> the zeros the tape filled in, held
        #: id -> (a weak reference to a gradient measured, its half squared norm): the
        #: tape hands one tensor on unchanged (a bias add's to its matmul, a read's to its
        #: variable), and each is measured once while it lives
        self._measured: dict[int, tuple[Any, Any]] = {}

    def __enter__(self) -> OutputGradients:
        from tensorflow.python import pywrap_tfe
        from tensorflow.python.eager import backprop

        vspace = backprop._default_vspace
        pywrap_tfe.TFE_Py_RegisterVSpace(
            vspace._replace(
                zeros_fn=self._noted(vspace.zeros_fn), zeros_like_fn=self._noted(vspace.zeros_like_fn)
            )
        )
        pywrap_tfe.TFE_Py_RegisterGradientFunction(self._measuring(backprop._gradient_function))
        return self

    def __exit__(self, *exc: Any) -> None:
        from tensorflow.python import pywrap_tfe
        from tensorflow.python.eager import backprop

        pywrap_tfe.TFE_Py_RegisterGradientFunction(backprop._gradient_function)
        pywrap_tfe.TFE_Py_RegisterVSpace(backprop._default_vspace)

    def _noted(self, zeros: Callable[..., Any]) -> Callable[..., Any]:
        def filled(*args: Any) -> Any:
            made = zeros(*args)
            self._fillers[id(made)] = made
            return made

        return filled

    def _measuring(self, gradient_function: Callable[..., Any]) -> Callable[..., Any]:
        def measured(
            op_type: Any, attrs: Any, num_inputs: Any, inputs: Any, outputs: Any, out_grads: Any, *rest: Any
        ) -> Any:
            entry = self._watched.get(id(attrs))
            if entry is not None and entry[0] is attrs:
                for i, key in entry[1]:
                    g = out_grads[i]
                    if g is not None and id(g) not in self._fillers:
                        try:
                            half = self.half_of(g)
                        except Exception:  # noqa: BLE001 - unmeasured, never the user's pass broken
                            continue
                        self._halves.append(half)
                        self._keys.append(key)
            result = gradient_function(op_type, attrs, num_inputs, inputs, outputs, out_grads, *rest)
            name = self._sole.get(id(attrs))
            if name is not None:
                self._answer(name, op_type, num_inputs, result, rest[0] if rest else None)
                if rest and rest[0] and name in self._stopped:
                    self._ask_skipped(
                        name,
                        rest,
                        lambda *skip: gradient_function(
                            op_type, attrs, num_inputs, inputs, outputs, out_grads, *skip
                        ),
                    )
            return result

        return measured

    def _answer(self, name: str, op_type: Any, n: int, result: Any, skipped: Any) -> None:
        """Note which inputs op ``name``'s gradient function gave a gradient. Inputs the
        tape told it to skip (``skip_input_indices``: no gradient wanted there) say
        nothing, and neither does an op type registered as not differentiable (the tape
        then hands back Nones of its own)."""
        if _gradient_registered(op_type) is not True:
            return
        grads = result if isinstance(result, (list, tuple)) else (result,)
        given = len(grads)
        if skipped:
            self.answered[name] = {
                i: (i < given and grads[i] is not None) for i in range(n) if i not in skipped
            }
        else:
            self.answered[name] = {i: (i < given and grads[i] is not None) for i in range(n)}

    def _ask_skipped(self, name: str, rest: tuple[Any, ...], call: Callable[..., Any]) -> None:
        """Answer op ``name``'s ports the tape skipped where a stopped gradient feeds them: its
        gradient function called once more, skipping none, on the same inputs, once per op
        signature in the pass, or in the process where its answers are shared
        (:data:`ASKED_AGAIN`), and not where this process has probed that signature already.
        Where that call raises, the ports stay unanswered and the prober probes them."""
        said = self.answered.get(name)
        skipped = rest[0]
        if said is None or self._graph is None or self._stopped[name].isdisjoint(skipped):
            return
        from tfviz.engine.gradrules import PROBED

        signature = self._graph.get_operation_by_name(name).probe_signature()
        full = self._full.get(signature)
        if full is None:
            if ("copied", *signature) in PROBED:
                return
            try:
                result = call(None, *rest[1:])
            except Exception:  # noqa: BLE001 - left to the probe, which says why
                return
            grads = list(result) if isinstance(result, (list, tuple)) else [result]
            full = self._full[signature] = {i: g is not None for i, g in enumerate(grads)}
        for i in skipped:
            if i in full:
                said[i] = full[i]

    def half_of(self, g: Any) -> Any:
        """Half the squared norm of gradient ``g`` (:func:`sq_norm_of`), once per tensor."""
        hit = self._measured.get(id(g))
        if hit is not None and hit[0]() is g:
            return hit[1]
        half = sq_norm_of(g)
        try:
            self._measured[id(g)] = (weakref.ref(g), half)
        except TypeError:  # not weakly referable: measured again where met again
            pass
        return half

    def norms_of(self, grads: list[Any]) -> list[float | None]:
        """Each gradient's L2 norm (None for no gradient), those measured in the pass not
        measured again."""
        present = [g for g in grads if g is not None]
        found = iter(read_halves([self.half_of(g) for g in present]))
        return [next(found) if g is not None else None for g in grads]

    def norms(self) -> dict[Key, float]:
        """The norms measured (:func:`read_halves`)."""
        if not self._halves:
            return {}
        return dict(zip(self._keys, read_halves(self._halves)))


def _raising_copy(exc: BaseException, stream: Stream) -> Any:
    """The graph copy of the op whose eager gradient function raised: eagerly that
    function is handed a stand-in op that holds the op's outputs."""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        op = tb.tb_frame.f_locals.get("op")
        outputs = getattr(op, "outputs", None)
        copy = stream.graph_tensor(outputs[0]) if outputs else None
        if copy is not None:
            found = copy.op
        elif op is not None and (named := _by_attrs(stream, getattr(op, "attrs", None))) is not None:
            found = named
        tb = tb.tb_next
    return found


def _by_attrs(stream: Stream, attrs: Any) -> Any:
    """The copied op the tape handed ``attrs`` for (the attribute tuple of its eager call, which
    the tape hands its gradient function), where exactly one copied op has that tuple."""
    if attrs is None:
        return None
    names = [name for name, held in stream.attrs_of.items() if held is attrs]
    return stream.graph.get_operation_by_name(names[0]) if len(names) == 1 else None
