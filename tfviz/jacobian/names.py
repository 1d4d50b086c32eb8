"""Which graph tensor or variable a name means.

Tensors are named as the graph document names ops: the op id (``Tanh``,
``dense/MatMul``), optionally with ``:k`` for output ``k`` (default 0), or
``target`` for the value the target returns; or as the user's code names them, by the
Python name a statement assigns the value to (``pred`` for ``pred = tf.matmul(x, w) + b``:
:func:`assigned_names`). Variables by their Python path (``model.layers[0].kernel``) or
their TensorFlow name (``dense/kernel``).

A tensor inside a nested function body (an inner ``tf.function``, a
``tf.cond`` branch, a ``tf.while_loop`` body; its id holds ``#``) is in the
graph view, but gradients cannot be taken from the outer graph to it: such a
name resolves with ``nested`` set, and the request is refused as
``not_reachable`` naming the call op whose output to use instead.
"""

from __future__ import annotations

import ast
import difflib
import linecache
import os
import weakref
from dataclasses import dataclass
from typing import Any

from tfviz.engine.graphbuild import TARGET, OpGraph
from tfviz.jacobian.data import JacobianError, TensorRef
from tfviz.report import Source
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
    """Every name a request may use: ``target``, variables, the user's names, float tensors."""
    names = ["target"]
    for f in found:
        names += [f.path, tf_name(f)]
    names += [n for n in assigned_names(og) if n not in og.g]
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
    said = assigned_names(og).get(name) if node is None else None
    if said is not None:  # the user's own name for it
        nid, index = said
        node = og.g.nodes[nid]
    if node is None and name in assigned_inside(og):
        call, where = assigned_inside(og)[name]
        outputs = og.g.nodes[call].get("outputs") or [] if call in og.g else []
        raise JacobianError(
            "not_found",
            f"'{name}' is assigned inside the body of '{call}' ({where.label(os.path.basename)}; a"
            " nested tf.function, tf.cond branch or tf.while_loop body), which gradients from the"
            f" outer graph cannot reach: what it computes leaves it as an output of '{call}'; name"
            " that output instead",
            candidates=[
                call if i == 0 else f"{call}:{i}" for i, o in enumerate(outputs) if o.dtype in FLOAT_DTYPES
            ],
        )
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
    shown = name if index or said is not None else nid
    ref = TensorRef(shown, "tensor", nid, index, out.dtype, _shape(out.shape, name, strict=False))
    return Resolved(ref, nested=_call_op(og, node.get("group") or ""))


def assigned_names(og: OpGraph) -> dict[str, tuple[str, int]]:
    """Each Python name the user's code assigned a value of the outer graph to, with the op id
    and output index of the value it held last: of the ops a statement ``NAME = ...`` ran (read
    by each op's user line, a multi-line statement's every line), the last one with a
    floating-point output is its value, for Python evaluates the outermost call last (the add of
    ``pred = tf.matmul(x, w) + b``); ``q, r = tf.linalg.qr(m)`` names the outputs of an op
    that has as many. A name assigned again (a Python loop's ``h = tf.tanh(h @ w)``) keeps the
    last. One assigned in a nested body (a ``tf.function``'s, a traced loop's or branch's: ``#``
    in its ops' ids) names no value from there on (:func:`assigned_inside`).

    >>> import networkx as nx
    >>> from types import SimpleNamespace as NS
    >>> import tempfile, os
    >>> from tfviz.engine.graphbuild import OpGraph
    >>> path = os.path.join(tempfile.mkdtemp(), "step.py")
    >>> _ = open(path, "w").write("h = tf.matmul(x, w)\\npred = tf.nn.relu(\\n    h + b)\\n")
    >>> g = nx.DiGraph()
    >>> f32 = NS(dtype="float32")
    >>> for nid, line in [("MatMul", 1), ("add", 3), ("Relu", 2)]:
    ...     g.add_node(nid, op=object(), group="", outputs=[f32], source=NS(file=path, line=line))
    >>> assigned_names(OpGraph(g=g))
    {'h': ('MatMul', 0), 'pred': ('Relu', 0)}
    """
    return _read(og)[0]


def assigned_inside(og: OpGraph) -> dict[str, tuple[str, Source]]:
    """Each name whose last assignment ran in a nested body (a ``tf.function``'s, AutoGraph's
    ``for t in tf.range(n): h = ...``), with the outermost op that ran the body (what it
    computes leaves it as that op's outputs) and the assigning line."""
    return _read(og)[1]


_Found = tuple[dict[str, tuple[str, int]], dict[str, tuple[str, Source]]]
#: what :func:`_read` found in each graph (by its id, with a weak reference to it: an id
#: stands for the graph only while it lives), read once for a session's many requests
_found: dict[int, tuple[weakref.ref[OpGraph], _Found]] = {}


def _read(og: OpGraph) -> _Found:
    hit = _found.get(id(og))
    if hit is not None and hit[0]() is og:
        return hit[1]
    statements: dict[str, dict[int, list[str | None]]] = {}
    names: dict[str, tuple[str, int]] = {}
    inside: dict[str, tuple[str, Source]] = {}
    for nid, node in og.g.nodes(data=True):
        source, outputs = node.get("source"), node.get("outputs") or []
        if node.get("op") is None or source is None or not outputs:
            continue
        by_line = statements.get(source.file)
        if by_line is None:
            by_line = statements[source.file] = _assignments(source.file)
        targets = by_line.get(source.line)
        if not targets:
            continue
        group = node.get("group") or ""
        if group:  # from here on the name holds the loop's or the cond's output
            for name in filter(None, targets):
                names.pop(name, None)
                inside[name] = (_call_op(og, group) or group, source)
            continue
        if len(targets) == 1 and targets[0] is not None and outputs[0].dtype in FLOAT_DTYPES:
            names[targets[0]] = (nid, 0)
            inside.pop(targets[0], None)
        elif len(targets) > 1 and len(outputs) == len(targets):
            for i, (target, out) in enumerate(zip(targets, outputs)):
                if target is not None and out.dtype in FLOAT_DTYPES:
                    names[target] = (nid, i)
                    inside.pop(target, None)
    found = (names, inside)
    for key in [k for k, (ref, _) in _found.items() if ref() is None]:
        del _found[key]
    _found[id(og)] = (weakref.ref(og), found)
    return found


def _assignments(filename: str) -> dict[int, list[str | None]]:
    """Each line of the statements of ``filename`` that assign to plain names, with the names
    (``None`` for a target that is not a plain name: ``self.h``, ``x[0]``); empty where the
    file cannot be read or parsed."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return {}
    out: dict[int, list[str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target: ast.expr = node.targets[0]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and getattr(node, "value", None) is not None:
            target = node.target
        else:
            continue
        parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        names = [t.id if isinstance(t, ast.Name) else None for t in parts]
        if not any(names):
            continue
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
            out[line] = names
    return out


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
