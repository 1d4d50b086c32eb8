"""Why a connected variable's gradient is exactly zero at the current values.

The chain is intact (a gradient path exists and TensorFlow returns a
tensor), but every element is 0: a dead ReLU, a multiplication by zero, a
``tf.cond`` branch that did not run. The per-tensor gradient norms locate
it: walking back from the target, the gradient is non-zero at some op's
output and zero at its input on this variable's path. That op zeroes it.

>>> import networkx as nx
>>> g = nx.DiGraph()
>>> g.add_edges_from([("v", "mm"), ("mm", "relu"), ("relu", "t")], status="passes", ports=[(0, 0)])
>>> zero_culprits(g, {"v", "mm", "relu", "t"}, {("relu", 0): 1.0, ("mm", 0): 0.0}, "t")
['relu']
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from tfviz.report import EDGE_PASSES, GraphFunction

#: Why an op of this type passes back zeros although its output's gradient is not zero.
WHY: dict[str, str] = {
    "Relu": "its inputs are all <= 0 where it matters (a dead ReLU)",
    "Relu6": "its inputs are all outside (0, 6) where it matters",
    "Mul": "the other factor is zero",
    "MatMul": "the other factor is zero",
    "BatchMatMulV2": "the other factor is zero",
    "Einsum": "the other factor is zero",
    "Maximum": "the other operand is the larger one",
    "Minimum": "the other operand is the smaller one",
    "SelectV2": "tf.where selects the other operand",
    "Select": "tf.where selects the other operand",
    "Sign": "its gradient is defined as zero everywhere",
    "Floor": "its gradient is zero everywhere",
    "Ceil": "its gradient is zero everywhere",
}

#: ops whose gradient is zero wherever it is defined: nothing before them ever trains
STEPWISE = frozenset({"Sign", "Floor", "Ceil"})
#: what to do about an op of :data:`STEPWISE`, where the general hint (a dead ReLU, a zero
#: factor) does not apply
STEPWISE_HINT = (
    "Its gradient is zero wherever it is defined, so nothing before it trains: train through"
    " a straight-through estimator, x + tf.stop_gradient(tf.sign(x) - x), or a smooth"
    " stand-in (tf.tanh(x / t)) in place of the step function."
)


#: (op type, input port) whose gradient TensorFlow defines as zero whatever the values, with
#: why and what to do: the cross-entropy ops give their labels the loss's own gradient only,
#: and drop the second-order term (the gradient of their backprop output) for them
STRUCTURAL_ZEROS: dict[tuple[str, int], tuple[str, str]] = {
    ("SoftmaxCrossEntropyWithLogits", 1): (
        "TensorFlow's gradient of softmax_cross_entropy_with_logits with respect to its labels"
        " leaves out what flows back through the gradient it computes for the logits, so through"
        " that path (a penalty on the logits' gradient) the labels get exact zeros whatever the"
        " values",
        "Write the cross-entropy with ops TensorFlow differentiates twice,"
        " -tf.reduce_sum(labels * tf.nn.log_softmax(logits), axis=-1), where the labels must"
        " get a second-order gradient.",
    ),
}


def structural_zero(g: nx.DiGraph[str], region: set[str], op: str) -> tuple[str, str] | None:
    """Why (and what to do) when ``op`` zeroes the gradient of an input it takes from
    ``region`` whatever the values (:data:`STRUCTURAL_ZEROS`); None otherwise.

    >>> g = nx.DiGraph()
    >>> g.add_node("ce", type="SoftmaxCrossEntropyWithLogits")
    >>> g.add_edge("labels", "ce", ports=[(0, 1)])
    >>> structural_zero(g, {"labels", "ce"}, "ce")[0][:40]
    "TensorFlow's gradient of softmax_cross_e"
    """
    kind = g.nodes[op].get("type", "")
    for u in g.predecessors(op):
        if u not in region:
            continue
        for _src, dst in g.edges[u, op].get("ports", []):
            found = STRUCTURAL_ZEROS.get((kind, dst))
            if found is not None:
                return found
    return None


#: ops that read a variable's value
READS = frozenset({"ReadVariableOp", "ResourceGather", "ResourceGatherNd"})


def zero_culprits(
    g: nx.DiGraph[str], region: set[str], norms: dict[tuple[str, int], float], target: str
) -> list[str]:
    """Ops in ``region`` with a non-zero gradient at their output and a zero
    gradient at an input on the path. Only measured tensors count: a tensor
    without a norm (inside a loop body, say) never makes an op a culprit."""
    live = {nid for (nid, _i), n in norms.items() if n > 0} | {target}
    out = []
    for v in region & live:
        for u in g.predecessors(v):
            e = g.edges[u, v]
            if u not in region or e.get("status") != EDGE_PASSES:
                continue
            seen = [norms.get((u, src_out)) for src_out, _ in e.get("ports", [])]
            if seen and all(n == 0.0 for n in seen):
                out.append(v)
                break
    return sorted(out)


def _branches_used(
    g: nx.DiGraph[str], region: Iterable[str], functions: list[GraphFunction], call: str
) -> set[str]:
    """The kinds of ``call``'s branches (then, else) that the path runs through."""
    groups = {g.nodes[n].get("group", "") for n in region}
    return {
        f.kind
        for f in functions
        if f.call_op == call and any(gr == f.id or gr.startswith(f.id + "/") for gr in groups)
    }


def untaken_branch(
    g: nx.DiGraph[str], region: Iterable[str], functions: list[GraphFunction], taken: dict[str, str]
) -> tuple[str, str] | None:
    """(If/Case node, branch kind) when the path runs only through branches not taken."""
    for call, ran in taken.items():
        mine = _branches_used(g, region, functions, call)
        if mine and ran not in mine:
            return call, sorted(mine)[0]
    return None


def only_branch(
    g: nx.DiGraph[str], region: Iterable[str], functions: list[GraphFunction], taken: dict[str, str]
) -> tuple[str, str] | None:
    """(If node, branch kind) when the variable is read in one branch of a ``tf.cond`` whose
    taken branch was not seen (it runs inside a loop body, where nothing is measured).

    The variable's reads decide, not the whole path: a loop carries the branch's result
    into the next step's other branch, so the path runs through both."""
    reads = [n for n in region if g.nodes[n].get("type") in READS]
    calls = sorted({f.call_op for f in functions if f.kind in ("then", "else") and f.call_op not in taken})
    for call in calls:
        mine = _branches_used(g, reads, functions, call)
        if len(mine) == 1:
            return call, next(iter(mine))
    return None


def cancelling_join(
    g: nx.DiGraph[str], region: set[str], start: str, norms: dict[tuple[str, int], float]
) -> str | None:
    """The first op on the variable's paths where two of them meet again.

    When no single op passes back a zero, the variable's paths each carry a
    gradient and their parts cancel where they are added up: a WGAN critic's
    output bias reaches ``mean(fake) - mean(real)`` through both means, and
    the ``Sub`` gives the two parts opposite signs. That join is the op that
    makes the sum zero. Only a join whose parts were measured, each non-zero,
    is one: where nothing is measured (a loop body) two paths that meet say
    nothing about why the sum is zero.

    >>> g = nx.DiGraph()
    >>> g.add_edges_from([("b", "r1"), ("b", "r2"), ("r1", "m1"), ("r2", "m2"), ("m1", "sub"),
    ...                   ("m2", "sub"), ("sub", "t")], status="passes", ports=[(0, 0)])
    >>> cancelling_join(g, set(g), "b", {("m1", 0): 0.5, ("m2", 0): 0.5})
    'sub'
    >>> cancelling_join(g, set(g), "b", {}) is None  # the parts were never measured
    True
    """
    if start not in g:
        return None
    distance = nx.single_source_shortest_path_length(g.subgraph(region | {start}), start)

    def parts(v: str) -> list[float | None]:
        return [
            norms.get((u, src_out))
            for u in g.predecessors(v)
            if u in distance and g.edges[u, v].get("status") == EDGE_PASSES
            for src_out, _ in g.edges[u, v].get("ports", [])
        ]

    joins = [
        v
        for v in distance
        if v != start and len(p := parts(v)) >= 2 and sum(1 for n in p if n is not None and n > 0) >= 2
    ]
    return min(joins, key=lambda v: (distance[v], v)) if joins else None


def cancel_text(op_type: str, label: str) -> str:
    """
    >>> cancel_text("Sub", "Sub 'sub'")  # doctest: +ELLIPSIS
    "the gradient parts ... cancel at Sub 'sub', which subtracts values computed from it (they add up...)"
    """
    how = {
        "Sub": "subtracts values computed from it",
        "AddV2": "adds values computed from it",
        "AddN": "adds values computed from it",
    }.get(op_type, "combines values computed from it")
    return (
        f"the gradient parts reaching it along separate paths cancel at {label}, which {how}"
        " (they add up to exactly zero)"
    )


def culprit_text(op_type: str, label: str) -> str:
    """
    >>> culprit_text("Relu", "Relu 'Relu'")
    "Relu 'Relu' passes back a zero gradient: its inputs are all <= 0 where it matters (a dead ReLU)"
    """
    why = WHY.get(op_type, "its gradient with respect to this input is zero at these values")
    return f"{label} passes back a zero gradient: {why}"


def branch_text(label: str, kind: str, line: str) -> str:
    return (
        f"it is used only in the {kind} branch of {label}{line}, which is not taken at these"
        " values; tf.cond gives it a zero gradient (run eagerly, tape.gradient returns None)"
    )


def in_loop(functions: list[GraphFunction], call: str) -> bool:
    """Whether the op ``call`` runs inside a ``tf.while_loop``'s body or condition.

    >>> body = GraphFunction("f:1", "body", "body", "", "while")
    >>> then = GraphFunction("f:2", "t", "then", "f:1", "if")
    >>> in_loop([body, then], "if"), in_loop([then], "if")
    (True, False)
    """
    by_id = {f.id: f for f in functions}
    mine = next((f for f in functions if f.call_op == call), None)
    parent = by_id.get(mine.parent) if mine is not None else None
    while parent is not None:
        if parent.kind in ("body", "cond"):
            return True
        parent = by_id.get(parent.parent)
    return False


def loop_branch_text(label: str, kind: str, line: str, loop: bool = True) -> str:
    """A branch whose taken side was not measured (inside a loop body, or a nested function
    tfviz does not measure): said as the likely cause, not as a fact."""
    where = ", inside a loop, where tfviz" if loop else "; tfviz"
    return (
        f"it is used only in the {kind} branch of {label}{line}{where}"
        " cannot see which branch ran: if that branch is not taken at these values, tf.cond"
        " gives it a zero gradient (run eagerly, tape.gradient returns None)"
    )
