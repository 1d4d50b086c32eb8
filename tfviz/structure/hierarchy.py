"""Group tree of a graph: nested function bodies, then name scopes inside each.

An op's place in the tree comes from its ``group`` (function body, nested via
``GraphFunction.parent``) and its ``scope``. The tree follows what the user wrote:

- a scope named after a Keras layer or model (known from the variables' paths) is kept,
  titled with the layer's name, without the ``_1`` the trace added;
- a scope that stands for no user object and holds only a handful of ops
  (``strided_slice_3``, ``Tensordot``) is flattened into its parent, and so is
  a scope holding a single thing;
- a weight's resource placeholder and ``ReadVariableOp`` (Keras' ``Cast ›
  ReadVariableOp``) are drawn as the weight's own node (:attr:`Hierarchy.alias`), and so
  is the inside of a small API call (``random_normal/shape``, ``strided_slice/stack``) in
  the op that returns its result (``random_normal``);
- function bodies are titled as the user wrote them: ``body of while_loop at rnn.py:31``,
  without the call op's scope (``while``) that all their ops share;
- repeated calls are titled by call order (``discriminator (2nd call)``), and constants
  and captured inputs by what they hold (:mod:`tfviz.structure.naming`).

Edges are projected to the lowest common group, so each group's layout only sees its
direct children.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tfviz.palette import QUIET, category
from tfviz.report import GraphDoc, GraphEdge, GraphOp, ReadNotTrained, Report, VariableReport
from tfviz.structure.naming import (
    SUFFIX,
    call_labels,
    const_title,
    function_title,
    input_title,
    layer_label,
    untraced,
)
from tfviz.vocabulary import Category, Flow

ROOT = "f:"
#: the scope TensorFlow puts a ``tape.gradient`` call's ops in (``gradient_tape_1``, ...)
GRADIENT_SCOPE = re.compile(r"^gradient_tape(?:_\d+)?$")
#: its box's title: the ops of another gradient computation the step's graph holds (a
#: GAN's first tape at its second step), not the model
GRADIENT_TITLE = "gradient computation"
#: a scope that is no layer and holds at most this many ops is flattened into its parent
SMALL_SCOPE = 6


def layer_names(variables: Iterable[VariableReport | ReadNotTrained]) -> set[str]:
    """Keras layer and model names, from the variables' TensorFlow names
    (``encoder/enc_1/kernel``): pass a report's ``variables`` and its ``read_not_trained``
    (a GAN step reads the other model's weights without training them)."""
    out: set[str] = set()
    for v in variables:
        parts = (getattr(v, "tf_name", "") or "").split("/")
        out.update(p for p in parts[:-1] if p)
    return out


@dataclass
class Group:
    id: str
    label: str
    kind: str  # root | function | scope | layer
    parent: str | None
    children: list[str] = field(default_factory=list)  # group ids and op ids, in input order
    n_ops: int = 0
    problems: dict[str, int] = field(default_factory=dict)  # legend category -> count
    on_path: bool = False
    scope: str = ""  # the full name scope a scope group stands for


def variable_owners(variables: Iterable[VariableReport | ReadNotTrained]) -> dict[str, str]:
    """Each variable's node and the layer its TensorFlow name puts it in
    (``discriminator/d_conv1/kernel`` -> ``d_conv1``); a bare variable (``w:0``) has none.

    >>> from tfviz.report import VariableReport as V
    >>> variable_owners([V("d.k", "disc/d_conv1/kernel", "float32", [], "connected"),
    ...                  V("w", "w:0", "float32", [], "connected")])
    {'var:d.k': 'd_conv1'}
    """
    out = {}
    for v in variables:
        parts = (getattr(v, "tf_name", "") or "").split(":")[0].split("/")
        if len(parts) >= 2 and parts[-2]:
            out[f"var:{v.name}"] = parts[-2]
    return out


class Hierarchy:
    def __init__(self, graph: GraphDoc, layers: set[str] | None = None, owners: dict[str, str] | None = None):
        """``layers``: Keras layer and model names (:func:`layer_names` of the report's
        variables); ``owners``: the layer each variable belongs to (:func:`variable_owners`)."""
        self.graph = graph
        self.owners = owners or {}
        #: which layer opened each scope, as Keras said while the step was traced
        self.layer_scopes = graph.layer_scopes
        self.layers = (layers or set()) | set(graph.layer_scopes.values())
        self.ops: dict[str, GraphOp] = {o.id: o for o in graph.ops}
        self.groups: dict[str, Group] = {ROOT: Group(ROOT, "graph", "root", None)}
        self.parent: dict[str, str] = {}  # op or group id -> group id
        #: function id -> the call op's name scope, which every op of its body shares
        self._own: dict[str, str] = {}
        self._call_type: dict[str, str] = {}
        #: op id -> the variable node drawn for it (its resource placeholder and plain reads)
        #: a weight's placeholder or plain read, problem or not -> the variable node it reads:
        #: named as that variable in every panel (the quiet ones are drawn as it, ``alias``)
        self.reads: dict[str, str] = {}
        self.alias: dict[str, str] = self._aliases()
        self._fed = {e.dst for e in graph.edges}
        self._build()
        self.chain: dict[str, list[str]] = {op: self._chain(op) for op in self.ops}
        for a, v in self.alias.items():
            self.chain[a] = self.chain[v]
        self._summarise()

    @classmethod
    def of_report(cls, report: Report) -> Hierarchy:
        """The tree the window draws for ``report``: its layers known from every variable the
        step reads, trained or not (a GAN step reads the other model's weights)."""
        every: list[VariableReport | ReadNotTrained] = [*report.variables, *report.read_not_trained]
        return cls(report.graph, layer_names(every), variable_owners(every))

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
                call = self.ops.get(fn.call_op) or self.ops.get(fn.parent + "/" + fn.call_op)
                label = function_title(fn, call)
                parent = self._scope_group(fn.parent, call.scope) if call else self._fn_group(fn.parent)
                self._own[fid] = call.name if call else fn.call_op
                self._call_type[fid] = fn.call_type or (call.type if call else "")
            self.groups[gid] = Group(gid, label, "function", parent)
            self._add_child(parent, gid)
        return gid

    def _scope_group(self, fid: str, scope: str) -> str:
        base = self._fn_group(fid)
        if not scope or scope == self._own.get(fid):  # ``while``: the body's box says it
            return base
        gid = f"{base}/s:{scope}"
        if gid not in self.groups:
            head, _, last = scope.rpartition("/")
            parent = self._scope_group(fid, head)
            known = self._layer_of(scope)
            name = known or layer_label(last, self.layers)
            kind = "layer" if known or name in self.layers else "scope"
            if not head and GRADIENT_SCOPE.match(last):  # another gradient call's ops: one box
                name, kind = GRADIENT_TITLE, "gradient"
            self.groups[gid] = Group(gid, name, kind, parent, scope=scope)
            self._add_child(parent, gid)
        return gid

    def _layer_of(self, scope: str) -> str | None:
        """The layer that opened ``scope``, its gradient's scope (``gradient_tape/...``) too."""
        known = self.layer_scopes.get(scope)
        first, _, rest = scope.partition("/")
        if known is None and rest and first.startswith("gradient_tape"):
            known = self.layer_scopes.get(rest)
        return known

    def _variable_home(self, var: str, homes: list[str]) -> str:
        """Where a variable is drawn: the deepest group holding all its readers, or, where
        that is no layer, the layer that owns it, never hoisted above the model.

        Readers in another gradient computation's box (a GAN's first tape, seen at its second
        step) do not count, unless there are no others. Where the readers share no layer (a
        discriminator called on real and on fake images), a weight goes to the first call of
        the layer its TensorFlow name says it belongs to, and its other readers draw an edge
        to it there. A variable no layer owns (an image being optimized) stays above them."""
        forward = [
            h for h in homes if not any(self.groups[g].kind == "gradient" for g in [*self._chain(h), h])
        ] or homes
        common = self._common(forward)
        owner = self.owners.get(var)
        if self.groups[common].kind == "layer" or owner is None:
            return common
        for h in forward:
            for g in reversed([*self._chain(h), h]):
                group = self.groups[g]
                if group.kind == "layer" and untraced(group.scope.rpartition("/")[2]) == owner:
                    return g
        return common

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
        alias = self.alias
        for op in self.graph.ops:
            if not op.is_variable and op.id not in alias:
                home[op.id] = self._scope_group(op.group, op.scope)
        # A variable sits in the deepest group holding all its readers, so a
        # model's hundreds of variables do not form one enormous top row.
        readers: dict[str, list[str]] = {}
        for e in self.graph.edges:
            src, dst = alias.get(e.src, e.src), alias.get(e.dst, e.dst)
            if dst in home and src != dst:
                readers.setdefault(src, []).append(home[dst])
        for op in self.graph.ops:
            if op.id in alias:
                continue
            if op.is_variable:
                homes = readers.get(op.id)
                home[op.id] = (
                    self._variable_home(op.id, homes) if homes else self._scope_group(op.group, op.scope)
                )
            self._add_child(home[op.id], op.id)
        self._models()
        self._flatten()
        for a, v in self.alias.items():  # a call folded into one that was folded in turn
            seen = {a}
            while v in self.alias and v not in seen:  # bounded: a hostile file's loop ends here
                seen.add(v)
                v = self.alias[v]
            self.alias[a] = v
        for g in list(self.groups.values()):
            kids = [self.groups[c] for c in g.children if c in self.groups]
            for k, label in zip(kids, call_labels([(k.label, k.scope, k.kind == "layer") for k in kids])):
                k.label = label

    def _models(self) -> None:
        """A scope holding two or more layers is a model (``resnet50_1``: Keras names a
        functional model's variables without it); titled without the trace's ``_1``."""
        for gid in sorted(self.groups, key=lambda g: g.count("/"), reverse=True):
            g = self.groups[gid]
            if g.kind not in ("scope", "layer"):
                continue
            subs = [self.groups[c].kind for c in g.children if c in self.groups]
            if subs.count("layer") >= 2 and 2 * subs.count("layer") >= len(subs):
                if g.kind == "scope":
                    g.kind, g.label = "layer", untraced(g.label)
                labels = [self.groups[c].label for c in g.children if c in self.groups]
                for c in g.children:  # a model's weightless layers (Flatten, Dropout) too
                    sub = self.groups.get(c)
                    if sub is None or sub.kind != "scope" or not sub.label.endswith("_1"):
                        continue
                    stem = untraced(sub.label)
                    # ``einsum`` beside ``einsum_1``: TensorFlow numbering two ops, no layer
                    # (a layer's trace scope ``flatten_1`` has no ``flatten`` beside it)
                    if SUFFIX.match(stem) or stem not in labels:
                        sub.kind, sub.label = "layer", stem

    def _aliases(self) -> dict[str, str]:
        """A weight's resource placeholder and the plain reads of it, by the weight they stand for.
        A read that is itself a problem (a frozen copy, a read never trained) keeps its node,
        named as the weight all the same (:attr:`reads`)."""
        ins: dict[str, list[GraphEdge]] = {}
        for e in self.graph.edges:
            if not e.back:
                ins.setdefault(e.dst, []).append(e)
        out: dict[str, str] = {}
        for op in self.graph.ops:  # graph order: a placeholder comes before its reads
            if op.is_variable or op.id not in ins or op.type not in ("Placeholder", "ReadVariableOp"):
                continue
            es = ins[op.id]
            if op.type == "ReadVariableOp" and any(e.dtype != "resource" for e in es):
                continue
            srcs = {out.get(e.src) or (e.src if e.src.startswith("var:") else None) for e in es}
            src = srcs.pop() if len(srcs) == 1 else None
            if category(op.status) in QUIET and src is not None and src != op.id:  # never its own alias
                out[op.id] = src
            read = {self.reads.get(e.src) or (e.src if e.src.startswith("var:") else None) for e in es}
            var = read.pop() if len(read) == 1 else None
            if var is not None and var != op.id:
                self.reads[op.id] = var
        return out

    def _op_count(self, gid: str) -> int:
        return sum(self._op_count(c) if c in self.groups else 1 for c in self.groups[gid].children)

    def _flatten(self) -> None:
        """Bottom-up: drop empty scopes; flatten those holding one thing, and small scopes
        that stand for no layer and hold no weight, into their parent."""
        # indexed once: each scope's check looked through every op and edge (ResNet50: 903
        # scopes, 2.2 million steps)
        self._by_name: dict[tuple[str, str], str] = {}
        for o in self.graph.ops:
            self._by_name.setdefault((o.group, o.name), o.id)
        self._reads: dict[str, list[str]] = {}
        for e in self.graph.edges:
            if not e.back:
                self._reads.setdefault(e.src, []).append(e.dst)
        for gid in sorted(self.groups, key=lambda g: g.count("/"), reverse=True):
            g = self.groups.get(gid)
            if g is None or g.kind != "scope" or g.parent is None:  # a scope always has a parent
                continue
            in_layer = any(self.groups[a].kind == "layer" for a in self._chain(gid))
            if len(g.children) > 1 and (
                self._op_count(gid) > SMALL_SCOPE
                or not in_layer
                and any(c in self.ops and self.ops[c].is_variable for c in g.children)
            ):
                continue  # big, or holding a weight outside any layer: it stands for a user object
            par = self.groups[g.parent]
            result = self._call_result(g)
            if result:
                for c in g.children:
                    self.alias[c] = result
                    del self.parent[c]
                par.children.remove(gid)
                del self.groups[gid]
                self.parent.pop(gid, None)
                continue
            i = par.children.index(gid)
            par.children[i : i + 1] = g.children
            for c in g.children:
                self.parent[c] = g.parent
                if c in self.groups:
                    self.groups[c].parent = g.parent
            del self.groups[gid]
            self.parent.pop(gid, None)

    def _call_result(self, g: Group) -> str:
        """The op that returns the result of the API call scope ``g`` stands for, if the scope
        is only that call's inside: TensorFlow names the result after the scope
        (``random_normal`` for ``random_normal/shape``, ``/mean``, ``/mul``), and nothing but
        the result reads the inside. Empty when ``g`` holds a box, a weight, an input of its
        function, a problem, or an op read from elsewhere: those stay in view."""
        ops = [self.ops.get(c) for c in g.children]
        if not ops or any(
            o is None
            or o.is_variable
            or o.type in ("Placeholder", "Target")
            or category(o.status) not in QUIET
            for o in ops
        ):
            return ""
        fid = self.ops[g.children[0]].group  # ops[0], not None (checked above)
        result = self._by_name.get((fid, g.scope), "")
        # ``result in g.children``: an op whose scope is its own name (only a hand-made file
        # has one) would stand for itself, and the alias loop in _build would never end
        if not result or result in self.alias or result in g.children or self.ops[result].is_variable:
            return ""
        inside = {*g.children, result}
        if any(dst not in inside for c in g.children for dst in self._reads.get(c, ())):
            return ""
        return result

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
            if op.id in self.alias:
                continue
            cat = category(op.status)
            for gid in self.chain[op.id]:
                g = self.groups[gid]
                g.n_ops += 1
                g.on_path = g.on_path or op.on_path
                # problem ops, and variables no gradient reaches (a layer behind a stop_gradient)
                if cat not in QUIET or (cat == Category.STARVED and op.is_variable):
                    g.problems[cat] = g.problems.get(cat, 0) + 1

    # -- queries ----------------------------------------------------------------
    def group_chain(self, gid: str) -> list[str]:
        return self._chain(gid) + [gid]

    def title(self, op_id: str) -> str:
        """An op's name within its box, without the scope of the group that holds it (or of
        the control-flow call whose body it is); a constant or input the trace named, by
        what it holds (:func:`~tfviz.structure.naming.const_title`,
        :func:`~tfviz.structure.naming.input_title`);
        a captured tensor the script holds, by its Python path (``model.layers[0].weights2``)."""
        op = self.ops[op_id]
        if op.label:  # a captured tensor, named by the Python path the script holds it at
            return op.label
        read = self.reads.get(op_id)
        if read is not None and read in self.ops:  # a raw read of a variable is that variable
            return self.ops[read].label or self.ops[read].name
        gid = self.parent.get(op_id, ROOT)
        g = self.groups.get(gid)
        if op.is_variable and g is not None:
            # inside its layer's box a weight needs only its own name: enc2 › kernel, not
            # encoder.get_layer("enc2").kernel (the full path is in Details and the tooltip)
            for held in (f'.get_layer("{g.label}").', f".{g.label}."):
                if held in op.name:
                    return op.name.rsplit(held, 1)[1]
            if op.name.startswith(f"{g.label}."):
                return op.name[len(g.label) + 1 :]
        prefix = (g.scope if g is not None else "") or self._own.get(gid[2:], "")
        local = op.name[len(prefix) + 1 :] if prefix and op.name.startswith(prefix + "/") else op.name
        fn = self._fns.get(op.group)
        return (
            input_title(
                op, local, op_id in self._fed, fn.kind if fn else "", self._call_type.get(op.group, "")
            )
            or const_title(op, local)
            or local
        )

    def display_name(self, node_id: str) -> str:
        """The one name every panel, the search and Copy name give a node: a box's title, a
        variable's or captured tensor's Python path (``model.layers[0].weights2``), else the
        op's title in its box. The TensorFlow name is only ever the secondary text."""
        if node_id in self.groups:
            return self.groups[node_id].label
        node_id = self.alias.get(node_id, node_id)
        op = self.ops.get(node_id)
        if op is None:
            return node_id
        if op.is_variable or op.label:
            return op.label or op.name
        return self.title(node_id)  # a raw read of a variable: the variable's name

    def user_named(self, node_id: str) -> bool:
        """The node's display name is the user's own (a variable, a raw read of one, a
        captured tensor): it needs no op type beside it."""
        node_id = self.alias.get(node_id, node_id)
        op = self.ops.get(node_id)
        return op is not None and (op.is_variable or bool(op.label) or node_id in self.reads)

    def where(self, node_id: str) -> str:
        """The box that holds a node, as a short title (``enc_2``, ``body of while_loop``);
        empty at the top level."""
        g = self.groups.get(self.parent.get(self.alias.get(node_id, node_id), ""))
        if g is None or g.kind == "root":
            return ""
        return g.label.split(" at ")[0].split(" (")[0] if g.kind == "function" else g.label

    def layer_of(self, node_id: str) -> str | None:
        """The innermost Keras layer (or model) box that holds a node, by its title."""
        for gid in reversed(self.chain.get(self.alias.get(node_id, node_id), [])):
            if self.groups[gid].kind == "layer":
                return self.groups[gid].label
        return None

    def representative(self, op_id: str, expanded: set[str]) -> str:
        """The op itself if every group above it is expanded, else the outermost collapsed group."""
        op_id = self.alias.get(op_id, op_id)
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
            src, dst = self.alias.get(e.src, e.src), self.alias.get(e.dst, e.dst)
            if src == dst:
                continue
            a, b = self.chain[src] + [src], self.chain[dst] + [dst]
            i = 0
            while i < len(a) and i < len(b) and a[i] == b[i]:
                i += 1
            if i >= len(a) or i >= len(b):
                continue
            out.setdefault(a[i - 1], set()).add((a[i], b[i]))
        return {g: sorted(es) for g, es in out.items()}

    def default_expanded(self, focus: Sequence[str] = (), budget: int = 250) -> set[str]:
        """Layer level: the top level's groups shown as boxes; a group that mostly holds other
        groups (a model of layers, a function of layers) is opened while the view stays under
        ``budget`` boxes. The groups holding each ``focus`` op (the first problem) are opened."""
        out, visible = {ROOT}, len(self.groups[ROOT].children)
        queue = [c for c in self.groups[ROOT].children if c in self.groups]
        while queue:
            gid = queue.pop(0)
            if self.groups[gid].kind == "gradient":  # stays one box unless a problem is inside
                continue
            kids = self.groups[gid].children
            sub = sum(1 for c in kids if c in self.groups)
            if sub < 2 or 2 * sub < len(kids) or visible - 1 + len(kids) > budget:
                continue
            out.add(gid)
            visible += len(kids) - 1
            queue.extend(c for c in kids if c in self.groups)
        for op_id in focus:
            out.update(self.chain.get(self.alias.get(op_id, op_id), []))
        return out

    def members(self, gid: str) -> list[str]:
        """The ops inside group ``gid`` (at any depth), in graph order."""
        return [o for o, ch in self.chain.items() if gid in ch and o not in self.alias]


def layer_attributes(h: Hierarchy, gid: str) -> dict[str, str]:
    """The Keras class and settings recorded for a group's scope (its gradient's scope,
    ``gradient_tape/...``, is the layer's too); empty when none was recorded."""
    scope = h.groups[gid].scope
    known = h.graph.layer_attributes
    if scope in known:
        return known[scope]
    first, _, rest = scope.partition("/")
    return known.get(rest, {}) if first.startswith("gradient_tape") else {}


def group_outputs(h: Hierarchy) -> dict[str, tuple[str, list[int | None] | None]]:
    """Each group's first output tensor (dtype, shape): the tensor of an edge that leaves it,
    in graph order, preferring one the gradient runs along (a BatchNormalization hands on its
    normalized batch; its batch statistics leave it first, toward the moving averages)."""
    out: dict[str, tuple[str, list[int | None] | None]] = {}
    for on_path in (True, False):
        for e in h.graph.edges:
            if e.back or e.src not in h.chain or e.dst not in h.chain or e.dtype == "resource":
                continue
            if on_path and e.status == Flow.OFF_PATH:
                continue
            inside = set(h.chain[e.dst])
            for gid in h.chain[e.src]:
                if gid not in inside and gid not in out:
                    out[gid] = (e.dtype, e.shape)
    return out
