"""Trace the analyzed step again and find the analyzed graph's tensors in it.

The graph view's op ids are op names of the analysis trace. The step is
traced again inside a new ``tf.function`` (same Python code, same order of
op creation, and names are made unique per graph), so the same name means
the same op; each pick is checked against the op type the analysis saw, and
when a name is missing or its type differs (code that names ops from global
counters) the op is found by its position among the ops of that type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tfviz.engine.graphbuild import TARGET, OpGraph
from tfviz.engine.trace import as_value, autograph
from tfviz.jacobian.data import JacobianError, TensorRef
from tfviz.jacobian.names import Resolved

#: The chunk-start argument: a name no user op has, so it shifts no op names.
START_ARG = "tfviz_jacobian_start"


class Picker:
    """Finds tensors of a fresh trace by the analyzed graph's op ids."""

    def __init__(self, og: OpGraph, fg: Any, loss: Any) -> None:
        self.og, self.fg, self.loss = og, fg, loss

    def tensor(self, ref: TensorRef) -> Any:
        if ref.node == TARGET:
            return self.loss
        op = self._op(ref.node)
        return op.outputs[ref.index]

    def source(self, r: Resolved) -> Any:
        """What ``tf.gradients`` differentiates with respect to: the variable
        itself (all its reads summed, as ``tape.jacobian`` does) or the tensor."""
        if r.variable is None:
            return self.tensor(r.ref)
        v = r.variable.tf_variable
        if hasattr(v, "assign") and hasattr(v, "handle"):
            return v
        for ext, internal in self.fg.captures:  # a watched tensor (program mode)
            if ext is v:
                return internal
        raise JacobianError("not_reachable", f"'{r.ref.name}' is not captured by the traced step")

    def _op(self, nid: str) -> Any:
        want = self.og.g.nodes[nid]["type"]
        try:
            op = self.fg.get_operation_by_name(nid)
        except KeyError:
            op = None
        if op is not None and op.type == want:
            return op
        same = [
            n
            for n, d in self.og.g.nodes(data=True)
            if d.get("type") == want and not d.get("group") and d.get("op") is not None
        ]
        mine = [o for o in self.fg.get_operations() if o.type == want]
        if nid in same and len(same) == len(mine):
            return mine[same.index(nid)]
        unwrapped = self._unwrapped(nid)
        if unwrapped is not None:
            return unwrapped
        raise JacobianError(
            "replay",
            f"tracing the step again did not give op '{nid}' ({want})"
            " again: the step does not build the same graph twice",
        )

    def _unwrapped(self, nid: str) -> Any | None:
        """The loop a call op of the analysis wraps, found in the new trace: differentiated
        under a tape in a ``tf.function``, TensorFlow rewrites a ``tf.while_loop`` to keep its
        intermediates and wraps it in a call (``cflow_gradient_wrapper``) named for the loop
        (``while/StatefulPartitionedCall``); traced again here for ``tf.gradients`` it is the
        plain loop (``while``), whose outputs are the first of the wrapper's, in order."""
        body = next((f for f in self.og.functions if f.call_op == nid and f.kind == "call"), None)
        if body is None or not body.name.startswith("cflow_gradient_wrapper"):
            return None
        loop = nid.rsplit("/", 1)[0]
        try:
            op = self.fg.get_operation_by_name(loop)
        except KeyError:
            return None
        return op if op.type in ("While", "StatelessWhile") else None


def trace_step(
    step_fn: Callable[[], Any], og: OpGraph, build: Callable[[Picker, Any], Any], with_start: bool = True
) -> Any:
    """A concrete function: the step traced again, then ``build(picker, start)``."""
    import tensorflow as tf

    converted = autograph(step_fn)

    def body(*args: Any) -> Any:
        try:
            loss = as_value(converted())
        except JacobianError:
            raise
        except Exception as exc:  # the user's code, reported as data
            raise JacobianError(
                "replay", f"tracing the step again raised {type(exc).__name__}: {exc}"
            ) from exc
        if not tf.is_tensor(loss):
            loss = tf.convert_to_tensor(loss)
        picker = Picker(og, tf.compat.v1.get_default_graph(), loss)
        return build(picker, args[0] if args else None)

    fn = tf.function(body, autograph=False)
    if with_start:
        return fn.get_concrete_function(tf.TensorSpec([], tf.int32, name=START_ARG))
    return fn.get_concrete_function()
