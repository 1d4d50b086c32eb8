"""Which graph tensor or variable a name means.

Tensors are named as the graph document names ops: the op id (``Tanh``,
``dense/MatMul``), optionally with ``:k`` for output ``k`` (default 0), or
``target`` for the value the target returns. Variables by their Python path
(``model.layers[0].kernel``) or their TensorFlow name (``dense/kernel``).

A tensor inside a nested function body (an inner ``tf.function``, a
``tf.cond`` branch, a ``tf.while_loop`` body; its id holds ``#``) is in the
graph view, but gradients cannot be taken from the outer graph to it: such a
name resolves with ``nested`` set, and the request is refused as
``not_reachable`` naming the call op whose output to use instead.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from tfviz.engine.graphbuild import TARGET, OpGraph
from tfviz.jacobian.data import JacobianError, TensorRef
from tfviz.script.discover import FoundVariable, tf_name, var_node

FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


@dataclass
class Resolved:
    """A name, resolved against the analyzed graph."""

    ref: TensorRef
    variable: FoundVariable | None = None
    #: the call op (If, While, PartitionedCall...) whose body holds the tensor
    nested: str | None = None


def candidates(og: OpGraph, found: list[FoundVariable]) -> list[str]:
    """Every name a request may use: ``target``, variables, float tensors."""
    names = ["target"]
    for f in found:
        names += [f.path, tf_name(f)]
    for nid, node in og.g.nodes(data=True):
        if node.get("op") is None or nid == TARGET:
            continue
        for i, out in enumerate(node.get("outputs") or []):
            if out.dtype in FLOAT_DTYPES:
                names.append(nid if i == 0 else f"{nid}:{i}")
    return list(dict.fromkeys(names))


def resolve(
    name: str, og: OpGraph, found: list[FoundVariable], *, allow_variable: bool = True, role: str = "tensor"
) -> Resolved:
    """The tensor or variable ``name`` means, or a ``not_found`` error with close matches."""
    name = (name or "").strip()
    if name in ("target", TARGET):
        out = og.g.nodes[TARGET]["outputs"][0]
        return Resolved(TensorRef("target", "target", TARGET, 0, out.dtype, _shape(out.shape, name)))
    if allow_variable:
        for f in found:
            if name in (f.path, tf_name(f), f"{tf_name(f)}:0"):
                v = f.tf_variable
                shape = [int(d) for d in v.shape.as_list()]
                return Resolved(TensorRef(f.path, "variable", var_node(f), 0, v.dtype.name, shape), f)
    nid, index = _split(name)
    node = og.g.nodes.get(nid) if nid is not None else None
    if node is None or node.get("op") is None or index >= len(node.get("outputs") or []):
        pool = candidates(og, found if allow_variable else [])
        close = difflib.get_close_matches(name, pool, n=8, cutoff=0.5)
        if not close:
            close = [c for c in pool if name.lower() in c.lower()][:8]
        raise JacobianError("not_found", f"no {role} named '{name}' in the analyzed graph", candidates=close)
    out = node["outputs"][index]
    if out.dtype not in FLOAT_DTYPES:
        raise JacobianError(
            "unsupported", f"'{name}' is a {out.dtype} tensor; a Jacobian needs a real floating-point tensor"
        )
    ref = TensorRef(
        name if index else nid, "tensor", nid, index, out.dtype, _shape(out.shape, name, strict=False)
    )
    return Resolved(ref, nested=_call_op(og, node.get("group") or ""))


def _split(name: str) -> tuple[str, int]:
    """``"a/b:1"`` -> ``("a/b", 1)``; ``"a/b"`` -> ``("a/b", 0)``.

    >>> _split("dense/MatMul:1"), _split("Tanh")
    (('dense/MatMul', 1), ('Tanh', 0))
    """
    if ":" in name:
        head, _, tail = name.rpartition(":")
        if tail.isdigit():
            return head, int(tail)
    return name, 0


def _shape(dims: Any, name: str, strict: bool = True) -> list[int]:
    """Static dims; an unknown dim is -1 (learned when the graph is traced again)."""
    if dims is None:
        if strict:
            raise JacobianError("unsupported", f"'{name}' has an unknown rank")
        return [-1]
    return [int(d) if d is not None else -1 for d in dims]


def _call_op(og: OpGraph, group: str) -> str | None:
    """The outermost call op whose body holds ``group`` (None: the outer graph)."""
    if not group:
        return None
    parents = {f.id: f for f in og.functions}
    fn = parents.get(group)
    while fn is not None and fn.parent and fn.parent in parents:
        fn = parents[fn.parent]
    return fn.call_op if fn is not None else group.split("#", 1)[0]


def refuse_nested(r: Resolved) -> None:
    """Gradients are taken in the outer graph; a nested body's tensor is out of reach."""
    if r.nested is None:
        return
    raise JacobianError(
        "not_reachable",
        f"'{r.ref.name}' is inside the body of '{r.nested}' (a nested tf.function, tf.cond branch"
        f" or tf.while_loop body): gradients cannot be taken to or from it from the outer graph."
        f" Pick an output of '{r.nested}', or a tensor outside it, instead",
        op=r.nested,
    )
