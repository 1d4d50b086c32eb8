"""Does an op pass the gradient to each of its inputs?

Decided with TensorFlow's own machinery: its gradient registry, the dtypes,
and by building the op's registered gradient in the traced graph with the op's
real static shapes (so an SVD with an unknown inner dimension raises here just
as it would under a tape, while a static-shape SVD does not). Results are
cached by op signature; a large model repeats a few hundred signatures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from tfviz.report import EDGE_PASSES
from tfviz.vocabulary import Kind

DIFFERENTIABLE = frozenset(
    {"float16", "bfloat16", "float32", "float64", "complex64", "complex128", "resource", "variant"}
)
PY_FUNC_OPS = frozenset({"PyFunc", "PyFuncStateless"})
ASSIGN_VALUE_OPS = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"})


@dataclass
class PortVerdict:
    status: str
    message: str = ""


#: Probe verdicts of this process, by signature, for the analyses of its own functions
#: (:func:`tfviz.check` on a function; :data:`Prober`'s ``cache`` in
#: :mod:`tfviz.analysis.diagnose`): a gradient function's answer for a signature does not
#: change while the process lives (TensorFlow's registry refuses a second registration, and a
#: custom gradient's identity is in the signature), and a notebook that checks its model
#: again need not probe its ops again. A worker's one analysis probes afresh.
PROBED: dict[tuple[Any, ...], list[PortVerdict]] = {}


#: Whether an eager call's copy takes each op's answer from TensorFlow's own backward pass
#: over that call (:attr:`Prober.answered`) before probing its signature; the probe alone is
#: the slow twin (``tests/test_answered_vs_probed.py``).
ANSWERED = True


@dataclass
class Prober:
    """Probes ops' gradients once per signature.

    ``answered``: for an eager call's copy, what each op's registered gradient function
    gave each input when TensorFlow's tape called it on that very call
    (:attr:`tfviz.engine.trace.Trace.answered`). A port it answered needs no probe: the
    probe builds the same function's gradient in a graph of its own to ask the same
    question (a third of a ResNet50 check's first run went to 155 such probes)."""

    cache: dict[tuple[Any, ...], list[PortVerdict]] = field(default_factory=dict)
    probes: int = 0
    answered: dict[str, dict[int, bool]] = field(default_factory=dict)

    def port(self, op: Any, i: int) -> PortVerdict:
        """Input ``i`` of ``op``: as the tape's own call answered it, else probed."""
        said = self.answered.get(op.name) if ANSWERED else None
        if said is not None and i in said:
            if said[i]:
                return PortVerdict(EDGE_PASSES)
            return PortVerdict(Kind.NOT_DIFFERENTIABLE, f"{op.type} returns no gradient for input {i}")
        return self.verdicts(op)[i]

    def verdicts(self, op: Any) -> list[PortVerdict]:
        key = _signature(op)
        hit = self.cache.get(key)
        if hit is None:
            hit = self.cache[key] = _probe(op)
            self.probes += 1
        return hit


def _signature(op: Any) -> tuple[Any, ...]:
    copied = getattr(op, "probe_signature", None)  # an eager op's copy (copiedgraph.CopiedOp)
    if copied is not None:
        return ("copied", *copied())
    attrs = tuple(
        sorted(
            (k, v.SerializeToString())
            for k, v in op.node_def.attr.items()
            if not k.startswith("_") or k == "_gradient_op_type"
        )
    )
    return (op.type, tuple(map(_tensor_key, op.inputs)), tuple(map(_tensor_key, op.outputs)), attrs)


def _tensor_key(t: Any) -> tuple[int, tuple[int, ...] | None]:
    """A graph tensor's dtype and shape as TensorFlow's C API gives them: a TensorShape
    made and printed for each cost more than the rest of a large model's signatures."""
    dims, unknown = t._shape
    return t.dtype._type_enum, None if unknown else tuple(dims)


def _fake_grad(t: Any) -> Any:
    """A stand-in for the gradient arriving at output ``t``.

    A variant output (a TensorList an RNN's loop accumulates into) or a
    resource passed along gets a gradient of its own kind; the tensor itself
    has that kind, so the gradient function sees what TensorFlow would hand it.
    """
    import tensorflow as tf

    if t.dtype.name not in DIFFERENTIABLE:
        return None
    if t.dtype.name in ("resource", "variant"):
        return t
    return tf.zeros_like(t)


def _probe(op: Any) -> list[PortVerdict]:
    """Build ``op``'s gradient in its own graph and read which inputs get one. An eager
    op's copy is made a graph op for this (:meth:`~tfviz.engine.copiedgraph.CopiedOp.probe_op`);
    where TensorFlow will not make it so, the registry alone answers."""
    import tensorflow as tf
    from tensorflow.python.framework import ops as tf_ops

    n = len(op.inputs)
    made = getattr(op, "probe_op", None)
    if made is not None:
        try:
            op = made()
        except Exception:  # noqa: BLE001 - the tape's own pass already gave the verdict
            return _registered(op.type, n)
    try:
        fn = tf_ops.get_gradient_function(op)
    except LookupError as exc:
        return [PortVerdict(Kind.NO_GRADIENT, _clean(exc))] * n
    if fn is None:
        return [PortVerdict(Kind.NOT_DIFFERENTIABLE, f"{op.type} is registered as not differentiable")] * n
    with op.graph.as_default(), tf.name_scope("tfviz_probe"):
        try:
            grads = [_fake_grad(t) for t in op.outputs]
            result = fn(op, *grads)
        except Exception as exc:  # noqa: BLE001 - any raise is exactly what we look for
            return [PortVerdict(Kind.UNIMPLEMENTED, f"{type(exc).__name__}: {_clean(exc)}")] * n
    if not isinstance(result, (list, tuple)):
        result = [result]
    out = []
    for i in range(n):
        g = result[i] if i < len(result) else None
        if g is None:
            out.append(PortVerdict(Kind.NOT_DIFFERENTIABLE, f"{op.type} returns no gradient for input {i}"))
        else:
            out.append(PortVerdict(EDGE_PASSES))
    return out


def _registered(kind: str, n: int) -> list[PortVerdict]:
    """Whether ops of type ``kind`` have a gradient, by TensorFlow's registry alone."""
    from tensorflow.python.framework import ops as tf_ops

    try:
        fn = tf_ops._gradient_registry.lookup(kind)
    except LookupError as exc:
        return [PortVerdict(Kind.NO_GRADIENT, _clean(exc))] * n
    if fn is None:
        return [PortVerdict(Kind.NOT_DIFFERENTIABLE, f"{kind} is registered as not differentiable")] * n
    return [PortVerdict(EDGE_PASSES)] * n


def _clean(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def port_verdict(g: nx.DiGraph[str], u: str, v: str, dst_in: int, prober: Prober) -> PortVerdict:
    """The gradient status of one input port of node ``v`` fed by ``u``."""
    e = g.edges[u, v]
    if e.get("status_fixed"):
        return PortVerdict(e["status"], e.get("message", ""))
    if e["dtype"] not in DIFFERENTIABLE:
        return PortVerdict(
            Kind.INTEGER, f"the value is {e['dtype']} here; gradients only flow through floats"
        )
    if e.get("synthetic") or e.get("boundary"):
        return PortVerdict(EDGE_PASSES)
    node = g.nodes[v]
    op = node.get("op")
    if op is None:  # the target sink, a variable node
        return PortVerdict(EDGE_PASSES)
    t = node["type"]
    if t == "StopGradient":
        return PortVerdict(Kind.STOP_GRADIENT, "tf.stop_gradient blocks the gradient on purpose")
    if t in ASSIGN_VALUE_OPS and dst_in == 1:
        return PortVerdict(Kind.ASSIGN, "assigning to a variable does not carry a gradient")
    if t in PY_FUNC_OPS:
        return PortVerdict(
            Kind.PY_FUNCTION, "tf.numpy_function runs Python; TensorFlow cannot differentiate it"
        )
    if t == "Placeholder":
        return PortVerdict(EDGE_PASSES)
    if op.outputs and all(o.dtype.name not in DIFFERENTIABLE for o in op.outputs):
        # No gradient can arrive at an integer output, so TensorFlow never calls the
        # op's gradient function (probing it with None may even raise, as Cast's does).
        return PortVerdict(Kind.INTEGER, f"{t} turns the value into {op.outputs[0].dtype.name}")
    return prober.port(op, dst_in) if dst_in < len(op.inputs) else PortVerdict(EDGE_PASSES)


#: Whether an edge into the region from outside it is given a status too. Its source is on
#: no variable's path to the target (were it downstream of one, it would be in the region),
#: so no verdict rests on it and the graph draws it off the path; its ports are the ones the
#: tape skipped, each a probe (ResNet50's 16, a third of its first check's probing time).
#: Giving them a status anyway is the slow twin (``tests/test_answered_vs_probed.py``).
STATUS_FROM_OUTSIDE = False


def annotate(g: nx.DiGraph[str], nodes: set[str], prober: Prober) -> None:
    """Set ``status``/``message`` on every edge into ``nodes`` from ``nodes`` (and, with
    :data:`STATUS_FROM_OUTSIDE`, from outside them too).

    An edge with several ports passes when any of them does.
    """
    outside = STATUS_FROM_OUTSIDE
    for v in nodes:
        for u in g.predecessors(v):
            if not outside and u not in nodes:
                continue
            e = g.edges[u, v]
            best: PortVerdict | None = None
            for _src_out, dst_in in e["ports"]:
                pv = port_verdict(g, u, v, dst_in, prober)
                if pv.status == EDGE_PASSES:
                    best = pv
                    break
                best = best or pv
            if best is not None:
                e["status"] = best.status
                e["message"] = best.message
