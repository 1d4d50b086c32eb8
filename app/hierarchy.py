"""Group tree of a graph: nested function bodies, then name scopes inside each.

An op's place in the tree comes from its ``group`` (function body, nested via
``GraphFunction.parent``) and its ``scope``. Scopes holding a single op are
flattened away: a box around one op only adds clutter. Edges are projected to
the lowest common group, so each group's layout only sees its direct children.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tfviz.report import GraphDoc, GraphOp

from .palette import QUIET, category

ROOT = "f:"


def mark_not_trained(report) -> None:
    """Give the read op of each ``not_trained`` variable (the problem's ``op``), and the
    variable's own node, the ``not_trained`` status, so the graph marks them. The engine
    adds these problems after the graph is built, when it compares the step's update with
    what the loss reads."""
    ops = {o.id: o for o in report.graph.ops}
    for p in report.problems:
        if p.kind != "not_trained":
            continue
        for oid in [p.op, *(f"var:{v}" for v in p.variables)]:
            op = ops.get(oid)
            if op is not None and op.status in ("passes", "off_path", "starved"):
                op.status, op.message = "not_trained", p.message
        for e in report.graph.edges:
            if e.dst == p.op and e.src in {f"var:{v}" for v in p.variables}:
                e.status = "not_trained"


@dataclass
class Group:
    id: str
    label: str
    kind: str  # root | function | scope
    parent: str | None
    children: list[str] = field(default_factory=list)  # group ids and op ids, in input order
    n_ops: int = 0
    problems: dict[str, int] = field(default_factory=dict)  # legend category -> count
    on_path: bool = False


class Hierarchy:
    def __init__(self, graph: GraphDoc):
        self.graph = graph
        self.ops: dict[str, GraphOp] = {o.id: o for o in graph.ops}
        self.groups: dict[str, Group] = {ROOT: Group(ROOT, "graph", "root", None)}
        self.parent: dict[str, str] = {}  # op or group id -> group id
        self._build()
        self.chain: dict[str, list[str]] = {op: self._chain(op) for op in self.ops}
        self._summarise()

    # -- construction ---------------------------------------------------------
    def _fn_group(self, fid: str) -> str:
        if not fid:
            return ROOT
        gid = "f:" + fid
        if gid not in self.groups:
            fn = self._fns.get(fid)
            parent = ROOT
            label = fid
            if fn is not None:
                label = f"{fn.name} ({fn.kind})" if fn.kind else fn.name
                call = self.ops.get(fn.call_op) or self.ops.get(fn.parent + "/" + fn.call_op)
                parent = self._scope_group(fn.parent, call.scope) if call else self._fn_group(fn.parent)
            self.groups[gid] = Group(gid, label, "function", parent)
            self._add_child(parent, gid)
        return gid

    def _scope_group(self, fid: str, scope: str) -> str:
        base = self._fn_group(fid)
        if not scope:
            return base
        gid = f"{base}/s:{scope}"
        if gid not in self.groups:
            head, _, last = scope.rpartition("/")
            parent = self._scope_group(fid, head)
            self.groups[gid] = Group(gid, last, "scope", parent)
            self._add_child(parent, gid)
        return gid

    def _common(self, gids: list[str]) -> str:
        chains = [self._chain(g) + [g] for g in set(gids)]
        out = ROOT
        for level in zip(*chains):
            if any(x != level[0] for x in level):
                break
            out = level[0]
        return out

    def _add_child(self, gid: str, child: str) -> None:
        self.groups[gid].children.append(child)
        self.parent[child] = gid

    def _build(self) -> None:
        self._fns = {f.id: f for f in self.graph.functions}
        for f in self.graph.functions:
            self._fn_group(f.id)
        home: dict[str, str] = {}
        for op in self.graph.ops:
            if not op.is_variable:
                home[op.id] = self._scope_group(op.group, op.scope)
        # A variable sits in the deepest group holding all its readers, so a
        # model's hundreds of variables do not form one enormous top row.
        readers: dict[str, list[str]] = {}
        for e in self.graph.edges:
            if e.dst in home:
                readers.setdefault(e.src, []).append(home[e.dst])
        for op in self.graph.ops:
            if op.is_variable:
                homes = readers.get(op.id)
                home[op.id] = self._common(homes) if homes else self._scope_group(op.group, op.scope)
            self._add_child(home[op.id], op.id)
        # flatten scope groups that hold exactly one thing, bottom-up
        for gid in sorted(self.groups, key=len, reverse=True):
            g = self.groups.get(gid)
            if g is None or g.kind != "scope" or len(g.children) != 1:
                continue
            (only,) = g.children
            par = self.groups[g.parent]
            par.children[par.children.index(gid)] = only
            self.parent[only] = g.parent
            if only in self.groups:
                self.groups[only].parent = g.parent
            del self.groups[gid]
            self.parent.pop(gid, None)

    def _chain(self, node: str) -> list[str]:
        """Groups above ``node``, root first."""
        out = []
        p = self.parent.get(node)
        while p is not None:
            out.append(p)
            p = self.groups[p].parent
        out.reverse()
        return out

    def _summarise(self) -> None:
        for op in self.ops.values():
            cat = category(op.status)
            for gid in self.chain[op.id]:
                g = self.groups[gid]
                g.n_ops += 1
                g.on_path = g.on_path or op.on_path
                # problem ops, and variables no gradient reaches (a layer behind a stop_gradient)
                if cat not in QUIET or (cat == "starved" and op.is_variable):
                    g.problems[cat] = g.problems.get(cat, 0) + 1

    # -- queries ----------------------------------------------------------------
    def group_chain(self, gid: str) -> list[str]:
        return self._chain(gid) + [gid]

    def representative(self, op_id: str, expanded: set[str]) -> str:
        """The op itself if every group above it is expanded, else the outermost collapsed group."""
        for gid in self.chain[op_id]:
            if gid != ROOT and gid not in expanded:
                return gid
        return op_id

    def child_edges(self) -> dict[str, list[tuple[str, str]]]:
        """For each group, the edges between its direct children (projected, deduplicated)."""
        out: dict[str, set[tuple[str, str]]] = {}
        for e in self.graph.edges:
            if e.back or e.src not in self.ops or e.dst not in self.ops:
                continue
            a, b = self.chain[e.src] + [e.src], self.chain[e.dst] + [e.dst]
            i = 0
            while i < len(a) and i < len(b) and a[i] == b[i]:
                i += 1
            if i >= len(a) or i >= len(b):
                continue
            out.setdefault(a[i - 1], set()).add((a[i], b[i]))
        return {g: sorted(es) for g, es in out.items()}

    def default_expanded(self, big: int = 300, budget: int = 200) -> set[str]:
        """Small graphs open fully expanded; large ones open collapsed, with groups
        opened breadth-first only while the view stays under ``budget`` boxes."""
        if len(self.ops) <= big:
            return set(self.groups)
        out, visible = {ROOT}, len(self.groups[ROOT].children)
        queue = [c for c in self.groups[ROOT].children if c in self.groups]
        while queue:
            gid = queue.pop(0)
            kids = self.groups[gid].children
            if visible - 1 + len(kids) > budget:
                continue
            out.add(gid)
            visible += len(kids) - 1
            queue.extend(c for c in kids if c in self.groups)
        return out

    def ancestors_to_expand(self, op_id: str) -> list[str]:
        return self.chain.get(op_id, [])
