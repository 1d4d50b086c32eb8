"""Gradient norms for tensors inside nested function bodies.

``tape.gradient`` only reaches tensors of the graph it recorded: an inner
``tf.function`` body or a ``tf.cond`` branch is a separate FuncGraph, run by
one call op, and its intermediates are invisible to the outer tape. What the
tape *can* measure are the call op's own inputs and outputs, and some of
those are exactly a body tensor's gradient:

* a body output ``t`` that nothing else in the body consumes and that is
  returned once: d loss/d t is the gradient of the call op's output;
* a body placeholder fed by an outer tensor ``x`` that nothing else consumes:
  d loss/d placeholder is the gradient of ``x``.

For ``If``/``Case`` only the branch taken at these values ran, so each such
mapping is kept for that branch alone; the predicate is returned from the
traced function to know which. ``While`` bodies are skipped: one body tensor
stands for every iteration, and no single outer gradient equals them all.
Tensors deeper inside a body get no norm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfviz.engine.graphbuild import CALL_OPS, CASE_OPS, IF_OPS, OpGraph, bodies

Key = tuple[str, int]


@dataclass
class NestedSources:
    """Outer tensors to differentiate, and the body tensors they stand for."""

    tensors: list[Any] = field(default_factory=list)
    keys: list[Key] = field(default_factory=list)
    #: body tensor key -> (call op node id, branch kind) for If/Case branches
    branch_of: dict[Key, tuple[str, str]] = field(default_factory=dict)
    #: call op node id -> its predicate (If) or branch index (Case), as int32
    preds: dict[str, Any] = field(default_factory=dict)
    #: call op node id -> its body kinds, in order
    kinds: dict[str, list[str]] = field(default_factory=dict)

    def taken(self, values: list[int]) -> dict[str, str]:
        """Which branch each If/Case ran, from the predicate values (in ``preds`` order)."""
        out = {}
        for (nid, _), v in zip(self.preds.items(), values):
            out[nid] = taken_kind(self.kinds[nid], int(v))
        return out

    def keep(self, key: Key, taken: dict[str, str]) -> bool:
        where = self.branch_of.get(key)
        return where is None or taken.get(where[0]) == where[1]


def taken_kind(kinds: list[str], value: int) -> str:
    """The body kind run for a predicate value: If's then/else, Case's branchN
    (an index out of range runs the last branch, as Case does).

    >>> taken_kind(["then", "else"], 0), taken_kind(["branch0", "branch1"], 7)
    ('else', 'branch1')
    """
    if kinds[:1] == ["then"]:
        return "then" if value else "else"
    return kinds[value] if 0 <= value < len(kinds) else kinds[-1]


def _measurable(t: Any) -> bool:
    return bool(t.dtype.is_floating or t.dtype.is_complex)


def nested_sources(og: OpGraph, region: set[str], fg: Any) -> NestedSources:
    """The outer call ops' tensors whose gradient is exactly a body tensor's."""
    import tensorflow as tf

    out = NestedSources()
    groups = {og.g.nodes[n].get("group", "") for n in region}
    for op in fg.get_operations():
        nested = bodies(op)
        if not nested or op.type not in CALL_OPS | IF_OPS | CASE_OPS:
            continue
        nid = op.name
        if not any(gr.startswith(f"{nid}#") for gr in groups):
            continue
        branched = op.type not in CALL_OPS
        args = list(op.inputs)[1:] if branched else list(op.inputs)
        if branched:
            out.preds[nid] = tf.cast(op.inputs[0], tf.int32)
            out.kinds[nid] = [k for k, _ in nested]
        for kind, body in nested:
            for outer, key in _boundary_pairs(op, args, f"{nid}#{kind}/", body):
                if key[0] in region and _measurable(outer):
                    out.tensors.append(outer)
                    out.keys.append(key)
                    if branched:
                        out.branch_of[key] = (nid, kind)
    return out


def _boundary_pairs(op: Any, args: list[Any], prefix: str, body: Any) -> list[tuple[Any, Key]]:
    """(outer tensor, body tensor key) pairs whose gradients are equal."""
    pairs = []
    returned = [id(t) for t in body.outputs]
    for j, t in enumerate(body.outputs[: len(op.outputs)]):
        if returned.count(id(t)) == 1 and not t.consumers() and not bodies(t.op):
            pairs += [(op.outputs[j], (prefix + x.op.name, x.value_index)) for x in _through_identity(t)]
    fed = [id(x) for x in op.inputs]
    for outer, inner in zip(args, body.inputs):
        if len(outer.consumers()) == 1 and fed.count(id(outer)) == 1:
            pairs.append((outer, (prefix + inner.op.name, 0)))
    return pairs


def _through_identity(t: Any) -> list[Any]:
    """``t`` and the tensors an Identity chain copies into it, each consumed only
    by the next: all have ``t``'s gradient (a function's results are Identity ops)."""
    out = [t]
    while t.op.type == "Identity" and len(t.op.inputs) == 1:
        t = t.op.inputs[0]
        if len(t.consumers()) != 1 or bodies(t.op) or t.op.type == "Placeholder":
            break
        out.append(t)
    return out
