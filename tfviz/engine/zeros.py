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


def zero_culprits(g: nx.DiGraph, region: set[str], norms: dict[tuple[str, int], float],
                  target: str) -> list[str]:
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


def untaken_branch(g: nx.DiGraph, region: Iterable[str], functions: list[GraphFunction],
                   taken: dict[str, str]) -> tuple[str, str] | None:
    """(If/Case node, branch kind) when the path runs only through branches not taken."""
    groups = {g.nodes[n].get("group", "") for n in region}
    for call, ran in taken.items():
        mine = {f.kind for f in functions if f.call_op == call and any(
            gr == f.id or gr.startswith(f.id + "/") for gr in groups)}
        if mine and ran not in mine:
            return call, sorted(mine)[0]
    return None


def cancelling_join(g: nx.DiGraph, region: set[str], start: str) -> str | None:
    """The first op on the variable's paths where two of them meet again.

    When no single op passes back a zero, the variable's paths each carry a
    gradient and their parts cancel where they are added up: a WGAN critic's
    output bias reaches ``mean(fake) - mean(real)`` through both means, and
    the ``Sub`` gives the two parts opposite signs. That join is the op that
    makes the sum zero.

    >>> g = nx.DiGraph()
    >>> g.add_edges_from([("b", "r1"), ("b", "r2"), ("r1", "m1"), ("r2", "m2"), ("m1", "sub"),
    ...                   ("m2", "sub"), ("sub", "t")], status="passes", ports=[(0, 0)])
    >>> cancelling_join(g, set(g), "b")
    'sub'
    """
    if start not in g:
        return None
    distance = nx.single_source_shortest_path_length(g.subgraph(region | {start}), start)
    joins = [v for v in distance if v != start and sum(
        1 for u in g.predecessors(v) if u in distance and g.edges[u, v].get("status") == EDGE_PASSES) >= 2]
    return min(joins, key=lambda v: (distance[v], v)) if joins else None


def cancel_text(op_type: str, label: str) -> str:
    """
    >>> cancel_text("Sub", "Sub 'sub'")  # doctest: +ELLIPSIS
    "the gradient parts ... cancel at Sub 'sub', which subtracts values computed from it (they add up...)"
    """
    how = {"Sub": "subtracts values computed from it", "AddV2": "adds values computed from it",
           "AddN": "adds values computed from it"}.get(op_type, "combines values computed from it")
    return (f"the gradient parts reaching it along separate paths cancel at {label}, which {how}"
            " (they add up to exactly zero)")


def culprit_text(op_type: str, label: str) -> str:
    """
    >>> culprit_text("Relu", "Relu 'Relu'")
    "Relu 'Relu' passes back a zero gradient: its inputs are all <= 0 where it matters (a dead ReLU)"
    """
    why = WHY.get(op_type, "its gradient with respect to this input is zero at these values")
    return f"{label} passes back a zero gradient: {why}"


def branch_text(label: str, kind: str, line: str) -> str:
    return (f"it is used only in the {kind} branch of {label}{line}, which is not taken at these"
            " values; tf.cond gives it a zero gradient (run eagerly, tape.gradient returns None)")
