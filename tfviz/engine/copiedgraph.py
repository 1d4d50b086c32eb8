"""The graph of a copied eager call: its ops as data, each made a TensorFlow op only when
its gradient must be probed.

Making a TensorFlow graph op of each eager op as it ran (the C API's op, its Python
``Operation`` and its output tensors) cost about as much again as the eager call itself:
most of tfviz's own time on a deep model of small layers. What the analysis reads of the
copy is what these classes hold: each op's type, name, inputs and outputs, each tensor's
dtype and shape (the eager call's, so always fully known), and the placeholders that
stand for what the call captured. Only an op whose gradient the prober builds
(:mod:`tfviz.engine.gradrules`, once per signature) is made in a graph, on its own, fed
by placeholders of its inputs' dtypes and shapes (:meth:`CopiedOp.probe_op`).
"""

from __future__ import annotations

import functools
from typing import Any


class CopiedTensor:
    """An output of a copied op: its dtype and its eager shape, read as a graph tensor's."""

    __slots__ = ("op", "value_index", "dtype", "_dims")

    def __init__(self, op: CopiedOp, value_index: int, dtype: Any, dims: tuple[int, ...] | None) -> None:
        self.op, self.value_index, self.dtype, self._dims = op, value_index, dtype, dims

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    @property
    def graph(self) -> CopiedGraph:
        return self.op.graph

    @property
    def _shape(self) -> tuple[list[int], bool]:
        """The dims and whether the rank is unknown, as TensorFlow's C API gives a graph
        tensor's (:func:`tfviz.engine.graphbuild.shape_of` reads it so)."""
        return ([] if self._dims is None else list(self._dims)), self._dims is None

    @property
    def shape(self) -> Any:
        import tensorflow as tf

        return tf.TensorShape(self._dims)

    def get_shape(self) -> Any:
        return self.shape

    def __repr__(self) -> str:
        return f"<CopiedTensor {self.name} {self.dtype.name}{list(self._dims or [])}>"


class CopiedOp:
    """One eager op of the call: type, name, input and output tensors, and its attributes
    (the eager tuple, and the serialized AttrValues a graph op of it carries)."""

    __slots__ = ("graph", "name", "type", "inputs", "outputs", "attrs", "values", "grouping", "_key")

    #: an op's stack: the copy reads each op's user line as it runs (``Stream.sources``)
    traceback: tuple[Any, ...] = ()

    def __init__(
        self,
        graph: CopiedGraph,
        name: str,
        kind: str,
        inputs: list[CopiedTensor],
        attrs: Any,
        values: dict[str, bytes],
        grouping: dict[str, Any] | None,
    ) -> None:
        self.graph, self.name, self.type, self.inputs = graph, name, kind, inputs
        self.attrs, self.values, self.grouping = attrs, values, grouping
        self.outputs: list[CopiedTensor] = []
        self._key: tuple[Any, ...] | None = None

    def probe_signature(self) -> tuple[Any, ...]:
        """What its gradient depends on: type, inputs' and outputs' dtypes and shapes, and
        attributes (the prober's cache key, :class:`tfviz.engine.gradrules.Prober`)."""
        if self._key is None:
            attrs: Any = self.attrs
            try:
                hash(attrs)
            except TypeError:  # an attribute value Python cannot hash
                attrs = tuple(sorted(self.values.items()))
            self._key = (
                self.type,
                tuple((t.dtype._type_enum, t._dims) for t in self.inputs),
                tuple((t.dtype._type_enum, t._dims) for t in self.outputs),
                attrs,
            )
        return self._key

    def probe_op(self) -> Any:
        """This op made in a graph of its own (:attr:`CopiedGraph.probes`), each input a
        placeholder of its dtype and shape, each output given the eager shape: what its
        registered gradient function is called with. Raises where TensorFlow refuses it."""
        graph = self.graph.probes()
        with graph.as_default():
            ins = [_placeholder(graph, t) for t in self.inputs]
        op = new_op(graph, self.type, ins, self.values, graph.unique_name(self.name), self.grouping)
        for copy, t in zip(op.outputs, self.outputs):
            _set_shape(copy, t._dims)
        return op

    def __repr__(self) -> str:
        return f"<CopiedOp {self.name} ({self.type})>"


class CopiedGraph:
    """The copied ops in the order they ran, named as a trace names them, and the
    placeholders that stand for what the call captured: ``captures`` as a trace's
    ``(external, internal)`` pairs."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._ops: dict[str, CopiedOp] = {}
        self.captures: list[tuple[Any, CopiedTensor]] = []
        #: each name in use, lowercased, and how many times it was asked for
        self._names_in_use: dict[str, int] = {}
        self._probes: Any = None

    def unique_name(self, name: str) -> str:
        """A name no op of the copy has yet, made as TensorFlow's ``Graph.unique_name`` makes
        a trace's (``name``, else ``name_1``, ``name_2``..., compared without case): its
        own, through the graph's thread-local name stack, cost a tenth of the copy's time."""
        key = name.lower()
        i = self._names_in_use.get(key, 0)
        self._names_in_use[key] = i + 1
        if i == 0:
            return name
        base = key
        while key in self._names_in_use:  # a name asked for as ``name_1`` before
            key = f"{base}_{i}"
            i += 1
        self._names_in_use[key] = 1
        return f"{name}_{i - 1}"

    def add(
        self,
        name: str,
        kind: str,
        inputs: list[CopiedTensor],
        outputs: Any,
        attrs: tuple[Any, dict[str, bytes], dict[str, Any] | None] = ((), {}, None),
    ) -> CopiedOp:
        """A new op ``name`` whose outputs are like the eager tensors ``outputs``; for a
        placeholder, ``attrs`` is left out: its dtype and shape are its output's."""
        op = CopiedOp(self, name, kind, inputs, *attrs)
        op.outputs = [CopiedTensor(op, i, t.dtype, t._shape_tuple()) for i, t in enumerate(outputs)]
        if kind == "Placeholder":
            op.values = _placeholder_attrs(op.outputs[0].dtype.as_datatype_enum, op.outputs[0]._dims)
        self._ops[name] = op
        return op

    def get_operations(self) -> list[CopiedOp]:
        return list(self._ops.values())

    def get_operation_by_name(self, name: str) -> CopiedOp:
        return self._ops[name]

    def release(self) -> None:
        """Let go of the ops, their tensors and the captures, each op's link to its tensors
        (and theirs back to it) undone: freed by reference counting, not left to the
        cycle collector (:meth:`tfviz.analysis.diagnose.Analysis.release`)."""
        for op in self._ops.values():
            op.inputs, op.outputs = [], []
        self._ops.clear()
        self.captures.clear()
        self._probes = None

    def probes(self) -> Any:
        """The graph the probed ops are made in, made at the first."""
        if self._probes is None:
            from tensorflow.python.framework import func_graph

            self._probes = func_graph.FuncGraph(f"{self.name}_probes")
        return self._probes


@functools.cache
def _placeholder_attrs(dtype: int, dims: tuple[int, ...] | None) -> dict[str, bytes]:
    from tensorflow.core.framework import attr_value_pb2, tensor_shape_pb2

    shape = (
        tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
        if dims is None
        else tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in dims]
        )
    )
    return {
        "dtype": attr_value_pb2.AttrValue(type=dtype).SerializeToString(),
        "shape": attr_value_pb2.AttrValue(shape=shape).SerializeToString(),
    }


def _placeholder(graph: Any, t: CopiedTensor) -> Any:
    op = new_op(
        graph,
        "Placeholder",
        [],
        _placeholder_attrs(t.dtype.as_datatype_enum, t._dims),
        graph.unique_name(t.op.name + "_probed"),
    )
    return op.outputs[0]


def _set_shape(copy: Any, dims: tuple[int, ...] | None) -> None:
    """Give graph tensor ``copy`` the eager shape ``dims`` where inference left it less
    known (an input that was a value is a placeholder here), through TensorFlow's C API."""
    if dims is None:
        return
    known, unknown = copy._shape
    if unknown or tuple(known) != dims:
        copy._set_shape(list(dims), False)
        copy._shape_val = None


def new_op(
    graph: Any,
    kind: str,
    inputs: list[Any],
    attrs: dict[str, bytes],
    name: str,
    grouping: dict[str, Any] | None = None,
) -> Any:
    """An op made in ``graph`` through TensorFlow's C API, as ``Graph._create_op_internal``
    makes it less what a probed op needs none of: a ``NodeDef`` built only to be read back,
    the lock against a session running the graph meanwhile, the checks of hand-written
    names and inputs (these are an eager op's), the graph's scopes of devices,
    colocation, kernel labels and control dependencies, and the Python stack. Not
    FuncGraph's own, which captures inputs. ``attrs`` are serialized AttrValues;
    ``grouping``, where the op's definition takes lists of inputs, the AttrValues by which
    ``inputs`` are grouped into them. TensorFlow infers the output types."""
    c_api, errors, ops = _internals()
    grouped: list[Any] = (
        inputs
        if grouping is None
        else ops._reconstruct_sequence_inputs(graph.op_def_for_type(kind), inputs, grouping)
    )
    with graph._c_graph.get() as c_graph:
        desc = c_api.TF_NewOperation(c_graph, kind, name)
    for x in grouped:
        if isinstance(x, list):
            c_api.TF_AddInputList(desc, [t._as_tf_output() for t in x])
        else:
            c_api.TF_AddInput(desc, x._as_tf_output())
    for key, value in attrs.items():
        c_api.TF_SetAttrValueProto(desc, key, value)
    try:
        c_op = c_api.TF_FinishOperation(desc)
    except errors.InvalidArgumentError as exc:
        raise ValueError(exc.message) from None
    return ops.Operation._from_c_op(c_op, graph)


@functools.cache
def _internals() -> tuple[Any, Any, Any]:
    from tensorflow.python.client import pywrap_tf_session
    from tensorflow.python.framework import errors, ops

    return pywrap_tf_session, errors, ops
