"""Turn a traced TensorFlow graph into a networkx graph of ops.

Nested function bodies (an inner ``tf.function``, ``tf.cond`` branches,
``tf.while_loop`` cond and body) are inlined as groups: data flows from the
caller's inputs into the body's placeholders and from the body's outputs to
the caller's consumers, so a path from a variable to the loss runs through
the op that actually breaks it, however deep it sits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from tfviz.report import GraphFunction, Source, TensorInfo
from tfviz.script.sourcemap import user_source

CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
IF_OPS = frozenset({"If", "StatelessIf"})
WHILE_OPS = frozenset({"While", "StatelessWhile"})
CASE_OPS = frozenset({"Case", "StatelessCase"})
ASSIGN_OPS = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"})
READ_OPS = frozenset({"ReadVariableOp", "ResourceGather"})
TARGET = "__target__"
_UNKNOWN = Source(file="", line=0)  # an op whose user line is to be read off its traceback


@dataclass
class OpGraph:
    """The flattened graph plus what the analysis needs to map back to TF."""

    g: nx.DiGraph[str]
    functions: list[GraphFunction] = field(default_factory=list)
    target: str = ""
    #: node id of each captured external tensor's placeholder, by id() of the external tensor
    capture_nodes: dict[int, str] = field(default_factory=dict)
    #: resource placeholder node -> the node the resource comes from outside
    resource_root: dict[str, str] = field(default_factory=dict)
    #: (call or control-flow op, output index) -> the body outputs the flattened graph carries
    #: that value by: such an op is drawn as its body, with no edges of its own
    redirect: dict[tuple[str, int], list[tuple[str, int]]] = field(default_factory=dict)

    def stand_ins(self, node: str, index: int = 0) -> list[str]:
        """The nodes whose edges carry output ``index`` of op ``node``: the op itself, or for
        a call or control-flow op the nodes of its body that stand for that output."""
        return list(dict.fromkeys(n for n, _ in self.redirect.get((node, index), [(node, index)])))


def shape_of(t: Any) -> list[int | None] | None:
    """A tensor's dims (None for an unknown one), or None where even its rank is unknown.
    A graph tensor's are read as TensorFlow's C API gives them: a TensorShape made for each
    of a large model's tensors cost more than the rest of its node."""
    read = getattr(t, "_shape", None)  # a graph tensor's (dims, rank unknown)
    if isinstance(read, tuple):
        dims, unknown = read
        return None if unknown else list(dims)
    try:
        shape: list[int | None] = t.shape.as_list()
    except ValueError:
        return None
    return shape


def tensor_info(t: Any) -> TensorInfo:
    return TensorInfo(dtype=t.dtype.name, shape=shape_of(t))


def _scope(name: str) -> str:
    return name.rsplit("/", 1)[0] if "/" in name else ""


def _function_graph(op: Any, fname: str) -> Any | None:
    graph = op.graph
    while graph is not None:
        fn = graph._get_function(fname) if hasattr(graph, "_get_function") else None
        if fn is not None:
            return getattr(fn, "graph", None)
        graph = getattr(graph, "outer_graph", None)
    return None


def bodies(op: Any) -> list[tuple[str, Any]]:
    """(kind, FuncGraph) pairs for an op that runs nested function bodies."""
    t = op.type
    try:
        if t in CALL_OPS:
            g = _function_graph(op, op.get_attr("f").name)
            return [("call", g)] if g is not None else []
        if t in IF_OPS:
            return [("then", op._true_graph), ("else", op._false_graph)]
        if t in WHILE_OPS:
            return [("cond", op._cond_graph), ("body", op._body_graph)]
        if t in CASE_OPS:
            return [(f"branch{i}", g) for i, g in enumerate(op._branch_graphs)]
    except (AttributeError, ValueError):
        return []
    return []


class _Builder:
    def __init__(self, sources: Mapping[str, Source | None] | None = None) -> None:
        #: each op's user line where it is known already (an eager op's, noted as it ran)
        self.known_sources = sources or {}
        self.g: nx.DiGraph[str] = nx.DiGraph()
        self.functions: list[GraphFunction] = []
        #: (node, output index) -> [(node, output index)] the value really comes from
        self.redirect: dict[tuple[str, int], list[tuple[str, int]]] = {}
        self.resource_root: dict[str, str] = {}
        self.read_order: list[str] = []
        #: (src, dst) -> the ports list of that edge, as the graph's edge holds it: looked up
        #: here, not through networkx's views (a model's every input is an edge)
        self._ports: dict[tuple[str, str], list[tuple[int, int]]] = {}

    def add_edge(self, src: str, src_out: int, dst: str, dst_in: int, t: Any, **kw: Any) -> None:
        ports = self._ports.get((src, dst))
        if ports is not None:  # the edge's own list, which the graph's edge holds
            ports.append((src_out, dst_in))
            return
        ports = self._ports[src, dst] = [(src_out, dst_in)]
        self.g.add_edge(
            src,
            dst,
            ports=ports,
            dtype=t.dtype.name,
            shape=shape_of(t),
            boundary=kw.get("boundary", False),
            back=kw.get("back", False),
            synthetic=kw.get("synthetic", False),
        )

    def sources(self, prefix: str, t: Any) -> list[tuple[str, int]]:
        key = (prefix + t.op.name, t.value_index)
        return self.redirect.get(key, [key])

    def add_graph(self, graph: Any, prefix: str, group: str) -> None:
        for op in graph.get_operations():
            nid = prefix + op.name
            source = self.known_sources.get(nid, _UNKNOWN)
            self.g.add_node(
                nid,
                op=op,
                name=op.name,
                type=op.type,
                scope=_scope(op.name),
                group=group,
                outputs=[tensor_info(o) for o in op.outputs],
                source=user_source(op.traceback or []) if source is _UNKNOWN else source,
            )
            nested = bodies(op)
            if nested:
                self.expand(op, nid, prefix, nested)
                continue
            for i, t in enumerate(op.inputs):
                for src, out in self.sources(prefix, t):
                    self.add_edge(src, out, nid, i, t)
            if op.type in READ_OPS or op.type in ASSIGN_OPS:
                self.read_order.append(nid)

    def expand(self, op: Any, nid: str, prefix: str, nested: list[tuple[str, Any]]) -> None:
        t = op.type
        args = list(op.inputs)
        if t in IF_OPS or t in CASE_OPS:
            pred = args.pop(0)
            for src, out in self.sources(prefix, pred):
                self.add_edge(src, out, nid, 0, pred)
        offset = len(op.inputs) - len(args)
        for kind, body in nested:
            fid = f"{nid}#{kind}"
            self.functions.append(
                GraphFunction(
                    id=fid,
                    name=body.name,
                    kind=kind,
                    parent=prefix.rstrip("/"),
                    call_op=nid,
                    source=user_source(op.traceback or []),
                    call_type=t,
                )
            )
            bprefix = fid + "/"
            for k, (outer, inner) in enumerate(zip(args, body.inputs)):
                ph = bprefix + inner.op.name
                for src, out in self.sources(prefix, outer):
                    # Placeholder nodes are added with the body; pre-create the edge target.
                    self.g.add_node(ph)
                    self.add_edge(src, out, ph, k + offset, outer, boundary=True)
                    if outer.dtype.name == "resource":
                        self.resource_root[ph] = self.resource_root.get(src, src)
            self.add_graph(body, bprefix, fid)
            if kind == "cond":
                continue
            for j, inner_out in enumerate(body.outputs):
                srcs = self.sources(bprefix, inner_out)
                self.redirect.setdefault((nid, j), []).extend(srcs)
                if kind == "body" and j < len(body.inputs):
                    ph = bprefix + body.inputs[j].op.name
                    for src, out in srcs:
                        self.add_edge(src, out, ph, j, inner_out, boundary=True, back=True)


def build_op_graph(
    fg: Any, target_tensor: Any, sources: Mapping[str, Source | None] | None = None
) -> OpGraph:
    """Flatten ``fg`` (a FuncGraph) and its nested bodies into one DiGraph.

    Also links each assignment to later reads of the same variable, since the
    value then flows through the variable's state rather than a tensor edge.
    ``sources`` holds the user's line of ops of ``fg`` that is known already.
    """
    b = _Builder(sources)
    b.add_graph(fg, "", "")
    og = OpGraph(
        g=b.g, functions=b.functions, target=TARGET, resource_root=b.resource_root, redirect=b.redirect
    )
    b.g.add_node(
        TARGET,
        op=None,
        name="target",
        type="Target",
        scope="",
        group="",
        outputs=[tensor_info(target_tensor)],
        source=None,
    )
    for src, out in b.sources("", target_tensor):
        b.add_edge(src, out, TARGET, 0, target_tensor)
    for ext, internal in getattr(fg, "captures", []):
        og.capture_nodes[id(ext)] = internal.op.name
    _link_assignments(b, og)
    return og


def _resource_of(b: _Builder, nid: str) -> str | None:
    for src, _dst in b.g.in_edges(nid):
        if b.g.edges[src, nid]["dtype"] == "resource":
            return b.resource_root.get(src, src)
    return None


def _link_assignments(b: _Builder, og: OpGraph) -> None:
    last_assign: dict[str, str] = {}
    for nid in b.read_order:
        res = _resource_of(b, nid)
        if res is None:
            continue
        if b.g.nodes[nid]["type"] in ASSIGN_OPS:
            last_assign[res] = nid
        elif res in last_assign:
            op = b.g.nodes[nid]["op"]
            b.add_edge(last_assign[res], 0, nid, 0, op.outputs[0], synthetic=True)
