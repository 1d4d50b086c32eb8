"""Turn an annotated graph and TensorFlow's own result into verdicts.

Static reasoning says *where* and *why*; ``tape.gradient`` says *whether*.
A verdict is reported only when both agree; a disagreement becomes an
``other`` problem, never a silent guess.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from tfviz.engine.explain import HINT, ZEROS_FOR_CUT, sentence
from tfviz.engine.flow import (
    Regions,
    ancestors_of,
    frontier_cuts,
    gradient_reach,
    integer_origins,
    last_made_from,
    live_raisers,
    union_region,
)
from tfviz.engine.gradrules import DIFFERENTIABLE
from tfviz.engine.graphdoc import graph_doc
from tfviz.engine.trace import Trace, Truth, value_norms
from tfviz.engine.zeros import (
    STEPWISE,
    STEPWISE_HINT,
    branch_text,
    cancel_text,
    cancelling_join,
    culprit_text,
    in_loop,
    loop_branch_text,
    only_branch,
    structural_zero,
    untaken_branch,
    zero_culprits,
)
from tfviz.errors import AnalysisError
from tfviz.report import (
    EDGE_PASSES,
    RAISING_KINDS,
    GraphDoc,
    Problem,
    Report,
    Source,
    VariableReport,
)
from tfviz.script.discover import FoundVariable, tf_name, var_node
from tfviz.vocabulary import Kind, Severity, Status

# When several cuts block one variable, name the most telling one.
PRIORITY = (
    Kind.FROZEN_COPY,
    Kind.OUTSIDE_TAPE,
    Kind.ASSIGN,
    Kind.PY_FUNCTION,
    Kind.STOP_GRADIENT,
    Kind.INTEGER,
    Kind.NOT_DIFFERENTIABLE,
    Kind.OTHER,
)


@dataclass
class FrozenCopy:
    variable: str
    node: str
    held_at: str | None
    origin: Source | None
    #: made of an array read out of a tensor computed from the variable (``.numpy()``), at
    #: ``origin``: no op links the two
    read_out: bool = False

    def describe(self) -> str:
        where = self.held_at or "a captured tensor"
        made = f" (made at {self.origin.label(os.path.basename)})" if self.origin else ""
        return f"{where}{made}{_READ_OUT if self.read_out else ''}"

    def outside_tape(self, tape_at: Source | None) -> str:
        """Why the variable gets no gradient where the copy is computed in the step itself,
        just before its tape opens (:func:`tfviz.analysis.tapes.computed_before_tape`)."""
        where = self.held_at or "the tensor the loss uses"
        made = f" at {self.origin.label(os.path.basename)}" if self.origin else ""
        tape = f" at {tape_at.label(os.path.basename)}" if tape_at is not None else ""
        return (
            f"{where} is computed from {self.variable}{made}"
            f"{_READ_OUT if self.read_out else ''}, before the step's"
            f" `with tf.GradientTape()`{tape} opens: the tape never records that computation,"
            f" so it gives {self.variable} no gradient"
        )

    def read_under_tape(self) -> str:
        """Why the variable gets no gradient where the copy is an array the step read out
        into Python under its own tape (:func:`tfviz.analysis.tapes.inside_tape`)."""
        where = self.held_at or "the tensor the loss uses"
        made = f" at {self.origin.label(os.path.basename)}" if self.origin else ""
        return (
            f"{where} is computed from {self.variable}{made}{_READ_OUT}, under the step's tape;"
            f" the loss is computed from that array, made a tensor again, and no op links an"
            f" array to {self.variable}: the tape gives it no gradient"
        )


_READ_UNDER_TAPE_HINT = (
    "Compute the loss from the tensor itself, in TensorFlow ops (tf.reduce_mean(tf.square(pred - y))),"
    " not from its .numpy() array: keep .numpy() for what you print or log."
)

#: what a copy made of an array read out into Python says of it (:attr:`FrozenCopy.read_out`)
_READ_OUT = " and read out into Python there (.numpy())"


def exception_kind(exc: BaseException | None) -> str:
    if isinstance(exc, NotImplementedError):
        return Kind.UNIMPLEMENTED
    if isinstance(exc, LookupError):
        return Kind.NO_GRADIENT
    return Kind.OTHER


def truth_status(truth: Truth, v: Any) -> str:
    if truth.raised:
        return Status.BROKEN
    return Status.CONNECTED if truth.grads_present.get(id(v)) else Status.DISCONNECTED


class _Problems:
    def __init__(self, custom_gradients: dict[str, tuple[str, Source | None]] | None = None) -> None:
        self.items: dict[tuple[str, str, str], Problem] = {}
        #: a problem at a tf.custom_gradient's op points at its gradient function, where the
        #: fix goes, not at the call
        self.custom_gradients = custom_gradients or {}

    def add(
        self,
        kind: str,
        op: str,
        op_type: str,
        message: str,
        var: str | None,
        source: Source | None,
        severity: str = Severity.ERROR,
        hint: str | None = None,
        group: str = "",
    ) -> None:
        """Add ``var`` to the problem of this kind at ``op`` (and ``group``: problems of one
        kind and op that need telling apart), made with the rest where it is the first."""
        key = (kind, op, group)
        custom = self.custom_gradients.get(op)
        if custom is not None and custom[1] is not None:
            source = custom[1]
        p = self.items.get(key)
        if p is None:
            p = self.items[key] = Problem(
                kind=kind,
                severity=severity,
                op=op,
                op_type=op_type,
                message=message,
                source=source,
                hint=HINT.get(kind, "") if hint is None else hint,
            )
        if var and var not in p.variables:
            p.variables.append(var)


def _var_report(
    f: FoundVariable, status: str, kind: str | None, norm: float | None, blocked: list[str], text: str
) -> VariableReport:
    v = f.tf_variable
    return VariableReport(
        name=f.path,
        tf_name=tf_name(f),
        dtype=v.dtype.name,
        shape=v.shape.as_list(),
        status=status,
        kind=kind,
        # A gradient that does not exist has no size: TensorFlow's zeros for a cut path in a
        # loop or a cond (where eagerly it returns None) are not a gradient of 0
        grad_norm=None if status == Status.DISCONNECTED else norm,
        blocked_at=blocked,
        explanation=text,
        source=f.source,
    )


def _weighed(reports: list[VariableReport], found: list[FoundVariable]) -> list[VariableReport]:
    """``reports`` with each variable's weight norm (:func:`value_norms`)."""
    norms = dict(zip((f.path for f in found), value_norms([f.tf_variable for f in found])))
    for r in reports:
        r.weight_norm = norms.get(r.name)
    return reports


_CUSTOM_HINT = (
    "Return a gradient for every input from the custom gradient function (None means none"
    " flows), or wrap the input in tf.stop_gradient where the cut is meant."
)


def _custom_cut(traced: Trace, region: set[str]) -> tuple[str, tuple[str, Source | None]] | None:
    """The first ``tf.custom_gradient`` output on a variable's path, with its function: where
    TensorFlow's gradient is the user's Python function, which may return None for an
    input that the copied ops (the function's forward pass) show as connected."""
    on_path = [n for n in traced.custom_gradients if n in region]  # in the order they ran
    return (on_path[0], traced.custom_gradients[on_path[0]]) if on_path else None


_UNUSED_HINT = (
    "Make the loss use these values: add every term you compute to it (in Keras, give each"
    " output you train a loss in compile()), and keep it in TensorFlow ops on the way"
    " (tf.reduce_mean, not np.mean; no .numpy() or float())."
)


def _at(g: nx.DiGraph[str], nid: str) -> str:
    """An op and its user line: ``Sub 'sub' (train.py:12)``, which a notebook's report says by
    its cell (``train.ipynb cell 3, line 2``)."""
    src = g.nodes[nid].get("source")
    return (
        f"{_label(g, nid)} ({src.label(os.path.basename)})"
        if src is not None and src.line
        else _label(g, nid)
    )


def _unused_message(g: nx.DiGraph[str], last: str, target: str) -> str:
    """Why variables the step reads get no gradient when nothing made from them reaches the
    target: the value stops at ``last``, and the target comes from elsewhere."""
    inputs = list(g.predecessors(target))
    made = [u for u in inputs if g.nodes[u].get("source") is not None]
    if made:
        origin = f"; the target is computed from {_at(g, made[0])} instead"
    elif inputs and all(g.in_degree(u) == 0 for u in inputs):  # numbers Python computed, as a tensor
        origin = "; the target itself is made of Python values, by no TensorFlow op"
    else:
        origin = ""
    read = _read_out(g, last)
    why = (
        "A value read out of TensorFlow carries no gradient back: what Python computes from it"
        " is a new constant to the tape"
        if read
        else "A value taken out of TensorFlow (.numpy(), NumPy, float()) carries no gradient back,"
        " nor does one left unused"
    )
    return (
        f"the values computed from these variables end at {_at(g, last)}{read}, which the target"
        f" does not use{origin}. {why}"
    )


def _read_out(g: nx.DiGraph[str], nid: str) -> str:
    """``, read out into Python there (.numpy())`` where the step's copy saw Python read the
    value of op ``nid``'s output, at that user's line (``there``: the op's own); else ``""``."""
    read = g.nodes[nid].get("read_out")
    if read is None:
        return ""
    how, where = read
    own = g.nodes[nid].get("source")
    if where is None:
        at = ""
    elif own is not None and (own.file, own.line) == (where.file, where.line):
        at = " there"
    else:
        at = f" at {where.label(os.path.basename)}"
    return f", read out into Python{at} ({how})"


def _label(g: nx.DiGraph[str], nid: str) -> str:
    n = g.nodes[nid]
    if str(n.get("label", "")).endswith("(custom gradient)"):
        return str(n["label"])  # what the user wrote, not the IdentityN that stands for it
    return f"{n.get('type', '?')} '{n.get('name', nid)}'"


def judge(
    found: list[FoundVariable],
    traced: Trace | None,
    eager: Truth,
    frozen: list[FrozenCopy],
    trace_error: AnalysisError | None,
    target_name: str,
) -> Report:
    """The step's verdicts, in stages (an eager-only step, with no trace, is judged apart):

    1. :func:`_regions`: which ops each variable reaches the target through, and where the
       gradient flows;
    2. :func:`_settle_raisers`: the ops expected to raise, against what TensorFlow's own call did;
    3. :func:`_shared_findings`: what several variables' verdicts draw on (NaN culprits, the
       cuts some verdict rests on, values computed and left unused);
    4. :func:`_variable_verdict`, per variable: broken, not read, reached (NaN, zero) or cut;
    5. :func:`_against_tensorflow`, per variable: that verdict checked against tape.gradient's;
    6. :func:`_report`: the variables in order of use, the problems, the graph document.
    """
    if traced is None:
        return _judge_eager(found, eager, trace_error)
    j = _regions(found, traced, eager, frozen, target_name)
    _settle_raisers(j)
    _shared_findings(j)
    reports = [_against_tensorflow(j, f, *_variable_verdict(j, f)) for f in found]
    return _report(j, reports)


@dataclass
class _Judging:
    """What the stages of :func:`judge` share: the step, its graph and what each stage found."""

    found: list[FoundVariable]
    traced: Trace
    eager: Truth
    frozen: list[FrozenCopy]
    target_name: str
    g: Any
    T: str
    truth: Truth
    anc: set[str]
    regions: Regions
    union: set[str]
    reach: set[str]
    problems: _Problems
    raisers: set[str] = field(default_factory=set)
    raiser_hints: dict[str, str] = field(default_factory=dict)
    #: where the gradient would flow if the raisers passed it
    would: set[str] = field(default_factory=set)
    by_node: dict[str, tuple[str, str]] = field(default_factory=dict)
    frozen_of: dict[str, list[FrozenCopy]] = field(default_factory=dict)
    nan_ops: list[str] = field(default_factory=list)
    #: the cut edges some variable's verdict rests on; every other cut blocks nothing
    needed: set[tuple[str, str]] = field(default_factory=set)
    dead_ends: dict[str, str] = field(default_factory=dict)


def _regions(
    found: list[FoundVariable], traced: Trace, eager: Truth, frozen: list[FrozenCopy], target_name: str
) -> _Judging:
    """Stage 1: the target's ancestors, each variable's region (the ops it reaches the target
    through), their union, where the gradient reaches, and the ops there that would raise."""
    g, T, truth = traced.og.g, traced.og.target, traced.truth
    g.nodes[T]["name"] = target_name
    anc = ancestors_of(g, T)
    regions = Regions(g, {f.path: var_node(f) for f in found}, T, anc)
    union = union_region(g, [var_node(f) for f in found], T, anc)
    reach = gradient_reach(g, T)
    j = _Judging(
        found, traced, eager, frozen, target_name, g, T, truth, anc, regions, union, reach,
        _Problems(traced.custom_gradients),
    )  # fmt: skip
    j.raisers = live_raisers(g, union, reach)
    return j


def _settle_raisers(j: _Judging) -> None:
    """Stage 2: the ops expected to raise, settled by TensorFlow's own call. Where it built
    the whole gradient, an expected raise was an artifact of tfviz's probe: TensorFlow wins,
    and the disagreement is shown rather than hidden. Where it raised and no op was expected
    to, the op it raised at is the raiser (or the tf.py_function whose gradient made it fail)."""
    g, T, truth, union = j.g, j.T, j.truth, j.union
    x: str | None
    kind: str | None
    if j.raisers and not truth.raised:
        for x in j.raisers:
            kind, msg = _raise_kind(g, x)
            j.problems.add(
                Kind.OTHER,
                x,
                g.nodes[x]["type"],
                f"tfviz expected {_label(g, x)} to raise"
                f" ({kind}: {msg}) but tape.gradient succeeded; treated as passing",
                None,
                g.nodes[x].get("source"),
                severity=Severity.WARNING,
            )
            for u in g.predecessors(x):
                if g.edges[u, x].get("status") in RAISING_KINDS:
                    g.edges[u, x]["status"] = EDGE_PASSES
        j.reach = gradient_reach(g, T)
        j.raisers = set()
    if truth.raised and not j.raisers:
        x = _node_of_op(g, truth.error_op)
        if x is not None and x in union:
            kind = exception_kind(truth.error)
            message = str(truth.error).strip().splitlines()[0] if str(truth.error).strip() else ""
            py = _py_function_after(g, x, union)
            if py is not None:
                # the gradient that made the op's own gradient fail came out of a tf.py_function
                x, kind, message = py, Kind.UNIMPLEMENTED, _py_function_text(g, x, message)
                j.raiser_hints[x] = PY_FUNCTION_HINT
            elif kind == Kind.OTHER:
                # Raised building that op's gradient (a tf.custom_gradient's own function):
                # what probing its gradient function in a graph finds too (gradrules)
                kind, message = Kind.UNIMPLEMENTED, f"{type(truth.error).__name__}: {message}"
            for u in g.predecessors(x):
                if u in union:
                    g.edges[u, x].update(status=kind, message=message)
            j.raisers = {x}


def _shared_findings(j: _Judging) -> None:
    """Stage 3: what several variables' verdicts draw on: where the gradient would flow past
    the raisers, each raiser's kind, the frozen copies by variable, the ops a NaN starts at,
    the cuts the raisers rest on, and where values made from each variable end unused."""
    g = j.g
    j.would = gradient_reach(g, j.T, also_pass=j.raisers) if j.raisers else j.reach
    j.by_node = {x: _raise_kind(g, x) for x in j.raisers}
    for c in j.frozen:
        j.frozen_of.setdefault(c.variable, []).append(c)
    j.nan_ops = _nan_culprits(g, j.traced, j.union, j.reach)
    j.needed = {
        (u, x)
        for x in j.raisers
        for u in g.predecessors(x)
        if u in j.union and g.edges[u, x].get("status") in RAISING_KINDS
    }
    j.dead_ends = last_made_from(g, [var_node(f) for f in j.found], j.anc)


def _variable_verdict(j: _Judging, f: FoundVariable) -> tuple[str, str | None, list[str], str]:
    """Stage 4: one variable's status, kind, the ops that block it and its sentence, from the
    graph alone: broken where an op on the joint call raises, not read where no path reaches
    the target, NaN or zero where the gradient reaches it, else cut where the path is."""
    g, problems, raisers, by_node = j.g, j.problems, j.raisers, j.by_node
    vn = var_node(f)
    norm = j.truth.norms.get(id(f.tf_variable))
    status: str = Status.CONNECTED
    kind: str | None = None
    blocked: list[str] = []
    text = ""
    if raisers:
        mine = sorted(raisers & j.regions[f.path])
        status = Status.BROKEN
        kind = by_node[mine[0]][0] if mine else by_node[sorted(raisers)[0]][0]
        blocked = mine or sorted(raisers)
        if mine:
            text = sentence(kind, op=_label(g, mine[0]), message=by_node[mine[0]][1])
            if vn in j.would:
                text += "; without that op this variable would get a gradient"
            for x in mine:
                problems.add(
                    by_node[x][0],
                    x,
                    g.nodes[x]["type"],
                    by_node[x][1],
                    f.path,
                    g.nodes[x].get("source"),
                    hint=j.raiser_hints.get(x),
                )
        else:
            text = (
                f"its own path is fine, but tape.gradient raises at {_label(g, blocked[0])}"
                " for other variables, so the joint call fails; it gets a gradient in a"
                " separate call or once that op is fixed"
            )
    elif vn not in j.anc and not getattr(f.tf_variable, "trainable", True):
        status, kind = Status.DISCONNECTED, Kind.NOT_READ
        text = sentence(Kind.NOT_READ) + ", which is not trainable: " + _NOT_TRAINABLE
        problems.add(
            Kind.NOT_READ,
            "",
            "",
            "the step asks for the gradient of variables that are not trainable: " + _NOT_TRAINABLE,
            f.path,
            f.source,
            severity=Severity.WARNING,
            hint="Differentiate model.trainable_variables, not model.variables.",
            group="not trainable",
        )
    elif vn not in j.anc and vn in j.dead_ends:  # read, but what is made from it goes unused
        status, kind = Status.DISCONNECTED, Kind.NOT_READ
        last = j.dead_ends[vn]
        text = (
            f"read, but what is computed from it ends at {_at(g, last)}{_read_out(g, last)},"
            " which the target does not use"
        )
        read = g.nodes[last].get("read_out")
        problems.add(
            Kind.NOT_READ,
            last,
            g.nodes[last].get("type", ""),
            _unused_message(g, last, j.T),
            f.path,
            # at the read, where the chain is cut (``values = pred.numpy()``), else where it ends
            (read[1] if read is not None else None) or g.nodes[last].get("source") or f.source,
            # read out into Python: the step's own code cut it, not a term left out of the sum
            severity=Severity.ERROR if read is not None else Severity.WARNING,
            hint=_UNUSED_HINT,
        )
    elif vn not in j.anc:  # its region is empty: no path to the target at all
        status, kind = Status.DISCONNECTED, Kind.NOT_READ
        text = sentence(Kind.NOT_READ)
        problems.add(
            Kind.NOT_READ,
            "",
            "",
            f"the target never reads {f.path}",
            f.path,
            f.source,
            severity=Severity.WARNING,
        )
    elif vn in j.reach:
        if norm is not None and not math.isfinite(norm):
            kind = Kind.NAN
            culprit = j.nan_ops[0] if j.nan_ops else ""
            blocked = j.nan_ops[:1]
            text = sentence(Kind.NAN, op=_label(g, culprit) if culprit else "an op")
            problems.add(
                Kind.NAN,
                culprit,
                g.nodes[culprit]["type"] if culprit else "",
                text,
                f.path,
                g.nodes[culprit].get("source") if culprit else None,
            )
        elif j.truth.zeros.get(id(f.tf_variable)):
            kind = Kind.ZERO
            blocked, text = _zero_verdict(g, j.traced, j.regions[f.path], f.path, problems, vn)
    else:
        status, kind, blocked, text = _cut_verdict(j, f, vn)
    return status, kind, blocked, text


def _cut_verdict(j: _Judging, f: FoundVariable, vn: str) -> tuple[str, str | None, list[str], str]:
    """A variable on a path to the target that the gradient does not reach: the cuts at the
    edge of where it flows, the op each is blamed on, and the sentence of the first kind."""
    g, problems = j.g, j.problems
    region = j.regions[f.path]
    cuts = frontier_cuts(g, region, j.reach, vn)
    kinds = sorted(
        {g.edges[u, v]["status"] for u, v in cuts},
        key=lambda k: PRIORITY.index(k) if k in PRIORITY else 99,
    )
    kind = kinds[0] if kinds else Kind.OTHER
    j.needed.update(cuts)
    blocked: list[str] = []
    for u, v in cuts:
        k = g.edges[u, v]["status"]
        for blame, msg in _blame(g, region, u, v):
            blocked.append(blame)
            j.needed.update(
                (p, blame)
                for p in g.predecessors(blame)
                if p in region and g.edges[p, blame].get("status") != EDGE_PASSES
            )
            src = g.nodes[blame].get("source")
            copy = next((c for c in j.frozen_of.get(f.path, []) if c.node == v), None)
            if k == Kind.FROZEN_COPY:
                src = copy.origin if copy else None
                msg = f"{f.path} reaches the target only through {msg}"
            elif k in (Kind.OUTSIDE_TAPE, Kind.NOT_READ) and copy is not None and copy.origin is not None:
                src = copy.origin  # the line that computed it before the tape opened, or read it out
            read_out = k == Kind.NOT_READ and copy is not None and copy.read_out
            hint = _READ_UNDER_TAPE_HINT if read_out else None
            problems.add(k, blame, g.nodes[blame]["type"], msg, f.path, src, hint=hint)
    blocked = sorted(set(blocked))
    copies = j.frozen_of.get(f.path)
    text = sentence(
        kind,
        op=_label(g, blocked[0]) if blocked else "an op",
        copy=copies[0].describe() if copies else "a copy",
        message="no gradient path reaches it",
    )
    own = [g.edges[u, v]["message"] for u, v in cuts if u == vn and g.edges[u, v].get("message")]
    if kind in (Kind.OUTSIDE_TAPE, Kind.NOT_READ) and own:
        text = own[0]  # the tape was never told to watch this tensor, or it was read out
    return Status.DISCONNECTED, kind, blocked, text


def _against_tensorflow(
    j: _Judging, f: FoundVariable, status: str, kind: str | None, blocked: list[str], text: str
) -> VariableReport:
    """Stage 5: the graph's verdict on one variable checked against tape.gradient's own (in
    tf.function, and eagerly where the step ran so): TensorFlow wins, a tf.custom_gradient that
    returns None is named as the cut, and any other disagreement is said."""
    g, problems, truth, eager = j.g, j.problems, j.truth, j.eager
    ts = raw_ts = truth_status(truth, f.tf_variable)
    if status == Status.DISCONNECTED and ts == Status.CONNECTED and truth.zeros.get(id(f.tf_variable)):
        ts, text = Status.DISCONNECTED, text + ZEROS_FOR_CUT  # zeros, not None: still the cut
    custom = _custom_cut(j.traced, j.regions[f.path]) if ts != status else None
    if custom is not None and status == Status.CONNECTED and ts == Status.DISCONNECTED:
        op, (fn_name, where) = custom
        status, kind, blocked = ts, Kind.NOT_DIFFERENTIABLE, [op]
        text = (
            f"the tf.custom_gradient function {fn_name} returns no gradient (None) for the"
            " input this variable reaches it by, so none flows back through it"
        )
        problems.add(
            Kind.NOT_DIFFERENTIABLE,
            op,
            g.nodes[op].get("type", ""),
            f"the gradient function of the tf.custom_gradient function {fn_name} returns"
            " None for an input, so no gradient flows back to what made that input",
            f.path,
            where or g.nodes[op].get("source"),
            hint=_CUSTOM_HINT,
        )
    elif ts != status:
        problems.add(
            Kind.OTHER,
            "",
            "",
            f"tfviz found {f.path} {status}, but tape.gradient in"
            f" tf.function finds it {ts}; trust TensorFlow here",
            f.path,
            None,
        )
        status, kind, text = ts, Kind.OTHER, f"TensorFlow's tape.gradient finds it {ts}"
    es = truth_status(eager, f.tf_variable)
    # (a graph step's eager truth is its trace's own: then there is nothing to compare; the
    # trace's zeros for a cut in a loop are compared as TensorFlow returned them)
    if eager is not truth and es != raw_ts and not _zeros_for_none(eager, truth, f.tf_variable):
        problems.add(
            Kind.OTHER,
            "",
            "",
            f"{f.path} is {es} when run eagerly but {ts} inside"
            " tf.function (as model.fit and @tf.function run it)",
            f.path,
            None,
            severity=Severity.WARNING,
        )
    return _var_report(f, status, kind, truth.norms.get(id(f.tf_variable)), blocked, text)


def _report(j: _Judging, reports: list[VariableReport]) -> Report:
    """Stage 6: the variables in the order the target uses them, one problem per line, and
    the graph document with every status drawn."""
    reports = _in_order_of_use(_weighed(reports, j.found), j.found, j.traced)
    plist = list(j.problems.items.values())
    ok = all(r.status == Status.CONNECTED and r.kind is None for r in reports) and not any(
        p.severity == Severity.ERROR for p in plist
    )
    doc = graph_doc(
        j.g,
        j.union,
        j.traced.tensor_norms,
        j.problems.items,
        j.nan_ops,
        j.traced.og.functions,
        reach=j.reach,
        needed=j.needed,
    )
    _mark_zero_variables(doc, reports)
    return Report(
        script="", target=j.target_name, ok=ok, variables=reports, problems=_one_per_line(plist), graph=doc
    )


def _mark_zero_variables(doc: GraphDoc, reports: list[VariableReport]) -> None:
    """A variable whose gradient is exactly zero is drawn and described so in its own box,
    with its norm 0: the path view's first hop then says what its row says."""
    zero = {f"var:{r.name}": r for r in reports if r.kind == Kind.ZERO}
    for op in doc.ops:
        r = zero.get(op.id)
        if r is not None and op.status == EDGE_PASSES:
            op.status, op.message, op.grad_norm = Kind.ZERO, r.explanation, r.grad_norm


def _one_per_line(problems: list[Problem]) -> list[Problem]:
    """One problem per kind, op type and line of the user's code: a Python loop that runs
    the same line again makes an op for each pass (an eager call copied as it ran, or an
    unrolled trace), where a ``tf.while_loop`` holds one. The first op stands for them all;
    the graph still marks each.

    >>> p = lambda op: Problem(kind="integer", severity="error", op=op, op_type="Greater",
    ...     message="m", variables=["w"], source=Source("f.py", 3, ""))
    >>> [q.op for q in _one_per_line([p("Greater"), p("Greater_1")])]
    ['Greater']
    """
    kept: dict[tuple[str, str, str, str, int], Problem] = {}
    out: list[Problem] = []
    for p in problems:
        if not p.op or p.source is None or not p.source.line:
            out.append(p)
            continue
        key = (p.kind, p.severity, p.op_type, p.source.file, p.source.line)
        first = kept.get(key)
        if first is None:
            kept[key] = p
            out.append(p)
            continue
        first.variables.extend(v for v in p.variables if v not in first.variables)
    return out


def _in_order_of_use(
    reports: list[VariableReport], found: list[FoundVariable], traced: Trace
) -> list[VariableReport]:
    """Variables in the order the target first uses them; unread ones last."""
    position = {nid: i for i, nid in enumerate(traced.og.capture_nodes.values())}
    g = traced.og.g

    def first_use(f: FoundVariable) -> int:
        return min((position.get(n, 10**9) for n in g.successors(var_node(f))), default=10**9)

    order = {f.path: first_use(f) for f in found}
    return sorted(reports, key=lambda r: order.get(r.name, 10**9))


#: why a variable the step asks a gradient for is never read: it is not trainable at all
_NOT_TRAINABLE = (
    "a BatchNormalization's moving statistics, say, are updated by assignment, not by"
    " gradients, so their gradient is None"
)


def _zeros_for_none(eager: Truth, traced: Truth, v: Any) -> bool:
    """Eager None and graph zeros (or the reverse) are the same verdict: TensorFlow
    returns zeros for cond/while inputs inside tf.function where eagerly it has None."""
    return any(
        a.grads_present.get(id(v)) is False and b.zeros.get(id(v))
        for a, b in ((eager, traced), (traced, eager))
    )


CANCEL_HINT = (
    "Often intended (a bias that shifts both terms of a difference equally, as in a WGAN"
    " critic's output bias); otherwise make the two terms depend on it differently."
)


def _zero_verdict(
    g: nx.DiGraph[str], traced: Trace, region: set[str], name: str, problems: _Problems, start: str
) -> tuple[list[str], str]:
    """Name the op (or the untaken tf.cond branch) that zeroes a connected gradient."""
    culprits = zero_culprits(g, region, traced.tensor_norms, traced.og.target)
    if culprits:
        for x in culprits:
            structural = structural_zero(g, region, x)
            if structural is not None:  # zero whatever the values: the step never trains it
                why = f"{_label(g, x)} passes back a zero gradient: {structural[0]}"
                source = g.nodes[x].get("source")
                problems.add(Kind.ZERO, x, g.nodes[x]["type"], why, name, source, hint=structural[1])
                text = (
                    f"the gradient is exactly zero whatever the values, so training never changes it: {why}"
                )
                return [x], text
        for x in culprits:
            why = culprit_text(g.nodes[x]["type"], _label(g, x))
            problems.add(
                Kind.ZERO,
                x,
                g.nodes[x]["type"],
                why,
                name,
                g.nodes[x].get("source"),
                severity=Severity.WARNING,
                hint=STEPWISE_HINT if g.nodes[x]["type"] in STEPWISE else None,
            )
        more = f" (and {len(culprits) - 1} more)" if len(culprits) > 1 else ""
        return culprits, sentence(
            Kind.ZERO, message=culprit_text(g.nodes[culprits[0]]["type"], _label(g, culprits[0])) + more
        )
    branch = untaken_branch(g, region, traced.og.functions, traced.branch_taken)
    if branch:
        call, kind = branch
        src = g.nodes[call].get("source")
        line = f" at {src.label(os.path.basename)}" if src else ""
        why = branch_text(_label(g, call), kind, line)
        problems.add(Kind.ZERO, call, g.nodes[call]["type"], why, name, src, severity=Severity.WARNING)
        return [call], sentence(Kind.ZERO, message=why)
    join = cancelling_join(g, region, start, traced.tensor_norms)
    if join is not None:
        why = cancel_text(g.nodes[join]["type"], _label(g, join))
        problems.add(
            Kind.ZERO,
            join,
            g.nodes[join]["type"],
            why,
            name,
            g.nodes[join].get("source"),
            severity=Severity.WARNING,
            hint=CANCEL_HINT,
        )
        return [join], sentence(Kind.ZERO, message=why)
    branch = only_branch(g, region, traced.og.functions, traced.branch_taken)
    if branch:
        call, kind = branch
        src = g.nodes[call].get("source")
        why = loop_branch_text(
            _label(g, call),
            kind,
            f" at {src.label(os.path.basename)}" if src else "",
            in_loop(traced.og.functions, call),
        )
        problems.add(Kind.ZERO, call, g.nodes[call]["type"], why, name, src, severity=Severity.WARNING)
        return [call], sentence(Kind.ZERO, message=why)
    why = (
        "tfviz cannot tell which op zeroes it (its path runs through tensors whose"
        " gradient is not measured, such as a loop body)"
    )
    problems.add(
        Kind.ZERO,
        "",
        "",
        f"the gradient of {name} is exactly zero; {why}",
        name,
        None,
        severity=Severity.WARNING,
    )
    return [], sentence(Kind.ZERO, message=why)


def _blame(g: nx.DiGraph[str], region: set[str], u: str, v: str) -> list[tuple[str, str]]:
    """The ops to name for the cut edge ``u -> v``, each with its message.

    An integer cut names the op that made the value integer (the ``Cast``,
    ``ArgMax``...), not the later op that consumes it.
    """
    e = g.edges[u, v]
    if e["status"] != Kind.INTEGER or g.nodes[u].get("op") is None:
        return [(v, e.get("message", ""))]
    out = []
    for x in integer_origins(g, region, u, DIFFERENTIABLE):
        msgs = [
            g.edges[p, x].get("message", "")
            for p in g.predecessors(x)
            if p in region
            and g.edges[p, x].get("status") == Kind.INTEGER
            and g.edges[p, x].get("dtype") in DIFFERENTIABLE
        ]
        out.append((x, msgs[0] if msgs else e.get("message", "")))
    return out


PY_FUNCTION_HINT = (
    "Compute the function with TensorFlow ops on the tensors it is handed (no .numpy(),"
    " no NumPy): tf.py_function differentiates only what TensorFlow ops compute, or wrap it in"
    " tf.stop_gradient where no gradient is meant to flow."
)


def _py_function_after(g: nx.DiGraph[str], x: str, union: set[str]) -> str | None:
    """The ``tf.py_function`` op (``EagerPyFunc``) between the op whose gradient raised and the
    target, if any: TensorFlow computes its inputs' gradient by running its Python function
    again under a tape, and a function that takes its values out of TensorFlow hands back a
    gradient the ops before it cannot use (TensorFlow then raises at one of them)."""
    found = [n for n in nx.descendants(g, x) & union if g.nodes[n].get("type") == "EagerPyFunc"]
    if not found:
        return None
    return min(found, key=lambda n: len(nx.shortest_path(g, x, n)))


def _py_function_text(g: nx.DiGraph[str], was: str, error: str) -> str:
    error = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", error)  # TensorFlow's wrapper, not the error
    error = re.sub(r"\s*name:\s*$", "", error)
    return (
        "tf.py_function runs Python, and TensorFlow computes its inputs' gradient by running"
        " that Python again under a tape; a function that takes its values out of TensorFlow"
        " (.numpy(), NumPy) gives none, so the layers before it get no gradient through it,"
        f" and the backward pass fails at {_label(g, was)}: {error}"
    )


def _raise_kind(g: nx.DiGraph[str], x: str) -> tuple[str, str]:
    for u in g.predecessors(x):
        e = g.edges[u, x]
        if e.get("status") in RAISING_KINDS:
            return e["status"], e.get("message", "")
    return Kind.UNIMPLEMENTED, ""


def _node_of_op(g: nx.DiGraph[str], op: Any) -> str | None:
    if op is None:
        return None
    for nid, data in g.nodes(data=True):
        if data.get("op") is op:
            return nid
    return None


def _nan_culprits(g: nx.DiGraph[str], traced: Trace, union: set[str], reach: set[str]) -> list[str]:
    """Ops whose output gradients are finite but that feed a non-finite one back.

    An input whose gradient is non-finite because another of its consumers is already
    non-finite does not make this op a culprit: ``log(p)`` next to ``log(1 - p)`` with ``p``
    exactly 1 shares ``p``'s NaN gradient, which ``log(1 - p)`` made.
    """
    bad: set[str] = {nid for (nid, _i), n in traced.tensor_norms.items() if not math.isfinite(n)}
    if not bad:
        return []

    def passes(u: str, v: str) -> bool:
        return bool(g.edges[u, v].get("status") == EDGE_PASSES)

    out = []
    for v in union & reach:
        if v in bad:
            continue
        if any(
            u in bad
            and passes(u, v)
            and not any(w != v and w in bad and passes(u, w) for w in g.successors(u))
            for u in g.predecessors(v)
        ):
            out.append(v)
    # Nearest the target first: fewest ops downstream.
    return sorted(out, key=lambda n: (len(g.nodes[n].get("name", "")), n))


def _judge_eager(found: list[FoundVariable], eager: Truth, trace_error: AnalysisError | None) -> Report:
    """No graph: verdicts come from the eager tape alone."""
    problems = _Problems()
    reason = trace_error.message if trace_error else "the target could not be traced"
    src = (
        Source(trace_error.file, trace_error.line, trace_error.code)
        if (trace_error and trace_error.file and trace_error.line)
        else None
    )
    problems.add(
        Kind.OTHER,
        "",
        "",
        f"{reason}; the gradient was checked eagerly, so the ops that cut it cannot be shown",
        None,
        src,
        severity=Severity.WARNING,
    )
    reports = []
    for f in found:
        v = f.tf_variable
        status = truth_status(eager, v)
        norm = eager.norms.get(id(v))
        kind, text = None, ""
        if status == Status.BROKEN:
            kind = exception_kind(eager.error)
            text = f"tape.gradient raises: {eager.error}"
            problems.add(kind, "", "", text, f.path, None)
        elif status == Status.DISCONNECTED:
            kind, text = Kind.OTHER, "tape.gradient returns None for it (found eagerly)"
            problems.add(Kind.OTHER, "", "", f"no gradient reaches {f.path}", f.path, None)
        elif norm is not None and not math.isfinite(norm):
            kind, text = Kind.NAN, "the gradient is NaN or infinite at the current values"
            problems.add(Kind.NAN, "", "", text, f.path, None)
        elif eager.zeros.get(id(v)):
            kind = Kind.ZERO
            text = sentence(
                Kind.ZERO, message="the target could not be traced, so the op that zeroes it cannot be shown"
            )
            problems.add(Kind.ZERO, "", "", text, f.path, None, severity=Severity.WARNING)
        reports.append(_var_report(f, status, kind, norm, [], text))
    plist = list(problems.items.values())
    ok = all(r.status == Status.CONNECTED and r.kind is None for r in reports) and not any(
        p.severity == Severity.ERROR for p in plist
    )
    return Report(
        script="", target="", ok=ok, variables=_weighed(reports, found), problems=plist, traced=False
    )
