"""Vanishing and exploding gradients: one rule, which ``check``, the JSON, the status bar and the
flow chart all read.

**The measure** is a variable's gradient per element, ``|grad| / sqrt(size)``, in decades
(log10). Norms grow with a variable's size: a 2048x1000 kernel and its bias differ by 1.5 decades
in norm when every element gets the same gradient, so norms cannot be compared across layers.
A ratio to the weight's own norm cannot be used either: biases start at exactly 0.

**The reference** is the variables nearest the target, i.e. with the fewest ops between them and
the loss. Their gradient comes almost straight from the loss. A vanishing gradient shrinks on
its way back through the layers, and an exploding one grows, so each variable is compared with
those nearest ones, not with the model's median. In a sigmoid stack half the variables sit
below the median, and the other half would look "exploding". The reference is the median of the
nearest tenth of the variables. Without a graph (the eager fallback) it is the median of all.

**The threshold** is :data:`DECADES` (5) either way, measured on healthy models. The gradients
that train ResNet50 and MobileNetV2 span 4.5 and 3.5 decades. The one furthest from the
reference is ResNet50's first conv kernel, 4.1 decades above it. Noise falls further below: a
bias right before a normalization layer gets a gradient of rounding size, 5 to 8 decades under
the reference, because the normalization cancels it, so it never trains. A cancelled bias in
the first blocks, where gradients are larger, can sit only 4 decades down and is not flagged:
the rule names what is certainly out of scale, not all that might be.

**Cancelled** variables are told apart from vanishing ones. A variable whose gradient sits
:data:`CANCELLED_GAP` decades or more below another variable of its own layer is rounding noise
of a gradient that is zero in exact arithmetic: a normalization after the layer cancels its
bias, or a softmax cancels an attention key's bias. That is information, not a warning: stock
Keras models (ResNet50, MultiHeadAttention) are built that way and train.

A flagged variable is still ``connected``: the gradient arrives. Vanishing and exploding are
warnings, and they never change ``ok`` or the exit status.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tfviz.report import GraphDoc, Problem, Report, VariableReport
from tfviz.vocabulary import Flow, Kind, Severity, Status

#: How far (in decades) a variable's gradient per element may sit from the reference.
DECADES = 5.0
#: How far below a layer-mate's gradient a variable's must sit to be cancelled (rounding noise).
CANCELLED_GAP = 4.0
#: ... and how far below the reference.
CANCELLED_BELOW = 2.0
#: The share of variables, nearest the target first, whose median is the reference.
NEAREST_SHARE = 0.1
#: The graph's node for the target (the loss).
TARGET = "__target__"

HINT = {
    Kind.CANCELLED: "Nothing to fix for training to work, but the variable is dead weight. A bias right"
    " before a normalization layer is cancelled by it: build that layer with use_bias=False"
    " (BatchNormalization's beta does the bias's job). In attention, the key projection's bias"
    " is cancelled by the softmax, which ignores a shift.",
    Kind.VANISHING: "Each layer it passes shrinks it: saturating activations (sigmoid, tanh), deep"
    " stacks without normalization or residual connections, or a too-small initializer.",
    Kind.EXPLODING: "Each layer it passes grows it: weights initialised too large, or far too small"
    " before a normalization layer (which divides the gradient by the weights' scale), or a deep"
    " stack without normalization. Use a variance-preserving initializer (glorot, he), normalize"
    " inputs and activations, or clip gradients (clipnorm).",
}


#: decades a layer's gradient norm grew over a watched run past which training diverged
DIVERGED_DECADES = 3.0


def diverged(report: Report) -> None:
    """Where the watched run saw a layer's gradient norm grow by :data:`DIVERGED_DECADES` or
    more from the first step to this one, an exploding gradient is training's own doing (each
    update overshoots further), not the initialization the general hint names: say so.

    >>> from tfviz.report import Problem, WatchSummary, WatchedLayer
    >>> r = Report(script="s.py", target="")
    >>> r.problems = [Problem(Kind.EXPLODING, "warning", "", "", "...")]
    >>> r.watch = WatchSummary(steps=4, layers=[WatchedLayer("dense", first=2290.0, last=3.47e13)])
    >>> diverged(r); r.problems[0].hint.split(":")[0]
    'The gradients grew 10.2 decades over the 4 steps watched (dense, from 2.29e+03 to 3.47e+13)'
    """
    watch = report.watch
    if watch is None:
        return
    grown = [
        (math.log10(layer.last / layer.first), layer)
        for layer in watch.layers
        if layer.first is not None
        and layer.last is not None
        and layer.first > 0 < layer.last
        and math.isfinite(layer.last)
    ]
    if not grown:
        return
    decades, layer = max(grown, key=lambda x: x[0])
    if decades < DIVERGED_DECADES:
        return
    hint = (
        f"The gradients grew {decades:.1f} decades over the {watch.steps} steps watched ({layer.name},"
        f" from {layer.first:.3g} to {layer.last:.3g}): training diverges, each update"
        " overshooting further. Lower the learning rate, normalize the inputs, or clip the"
        " gradients (clipnorm)."
    )
    for p in report.problems:
        if p.kind == Kind.EXPLODING:
            p.hint = hint


@dataclass(frozen=True)
class Magnitude:
    """One variable's gradient against the reference, both per element."""

    per_element: float
    reference: float

    @property
    def decades(self) -> float:
        """How many decades above (positive) or below the reference it sits."""
        return math.log10(self.per_element) - math.log10(self.reference)

    @property
    def verdict(self) -> str | None:
        """``vanishing``, ``exploding`` or None.

        >>> Magnitude(1e-9, 1e-2).verdict, Magnitude(5e3, 1e-2).verdict, Magnitude(1.0, 1e-2).verdict
        ('vanishing', 'exploding', None)
        """
        if self.decades < -DECADES:
            return Kind.VANISHING
        if self.decades > DECADES:
            return Kind.EXPLODING
        return None


def per_element(v: VariableReport) -> float | None:
    """``|grad| / sqrt(size)``, or None where the variable has no finite, non-zero gradient
    that arrives (its other verdicts speak for it).

    >>> per_element(VariableReport("w", "w", "float32", [10, 10], "connected", grad_norm=5.0))
    0.5
    >>> per_element(VariableReport("w", "w", "float32", [3], "connected", kind="zero", grad_norm=0.0))
    """
    g = v.grad_norm
    if v.status != Status.CONNECTED or v.kind is not None or g is None or not math.isfinite(g) or g <= 0:
        return None
    size = math.prod(d if d is not None else 1 for d in v.shape)
    return g / math.sqrt(size) if size > 0 else None


def hops_to_target(graph: GraphDoc) -> dict[str, int]:
    """The fewest ops between each variable (by name) and the target, over the edges that
    carry the gradient back.

    >>> from tfviz.report import GraphEdge
    >>> e = lambda a, b: GraphEdge(a, b, 0, 0, "float32", [], "passes")
    >>> doc = GraphDoc(edges=[e("var:w", "m"), e("m", "r"), e("r", TARGET), e("var:b", "r")])
    >>> sorted(hops_to_target(doc).items())
    [('b', 2), ('w', 3)]
    """
    into: dict[str, list[str]] = {}
    for e in graph.edges:
        if not e.back and e.status != Flow.OFF_PATH:
            into.setdefault(e.dst, []).append(e.src)
    seen = {TARGET: 0}
    queue = deque([TARGET])
    while queue:
        node = queue.popleft()
        for src in into.get(node, ()):
            if src not in seen:
                seen[src] = seen[node] + 1
                queue.append(src)
    return {n[4:]: d for n, d in seen.items() if n.startswith("var:")}


def reference(sizes: Mapping[str, float], hops: Mapping[str, int] | None) -> float:
    """The median gradient per element of the nearest tenth of the variables (with every one at
    the same distance as the last of them), or of all where distances are unknown.

    >>> reference({"a": 1e-6, "b": 1e-3, "c": 1.0}, {"a": 9, "b": 5, "c": 2})
    1.0
    >>> reference({"a": 1e-6, "b": 1e-3, "c": 1.0}, None)
    0.001
    """
    names = list(sizes)
    known = [n for n in names if hops is not None and n in hops]
    if known and hops is not None:
        known.sort(key=lambda n: hops[n])
        cutoff = hops[known[max(1, math.ceil(NEAREST_SHARE * len(known))) - 1]]
        names = [n for n in known if hops[n] <= cutoff]
    logs = [math.log10(sizes[n]) for n in names]
    return float(10 ** statistics.median(logs))


#: the two kinds of variable, each compared with its own kind: a kernel's gradient is its
#: input's activations times the gradient arriving, a bias's or a scale's the arriving gradient
#: alone, so where the activations grow (an exploding forward pass) every kernel's gradient is
#: large while the biases' show how the gradient itself grows on its way back
KERNELS = "kernels"
VECTORS = "biases and scales"


def role(shape: Iterable[int | None]) -> str:
    """``kernels`` for a variable of two dimensions or more, else ``biases and scales``.

    >>> role([64, 64]), role([64]), role([])
    ('kernels', 'biases and scales', 'biases and scales')
    """
    return KERNELS if len(list(shape)) >= 2 else VECTORS


def references(
    sizes: Mapping[str, float], roles: Mapping[str, str], hops: Mapping[str, int] | None
) -> dict[str, float]:
    """Each role's reference (:func:`reference` over its own variables); a role with fewer than
    three variables that get a gradient is compared with the reference of all of them.

    >>> refs = references({"k1": 1.0, "k2": 1.0, "k3": 1.0, "b1": 1e-3, "b2": 1e-9},
    ...                   {"k1": KERNELS, "k2": KERNELS, "k3": KERNELS, "b1": VECTORS, "b2": VECTORS}, None)
    >>> refs[KERNELS], refs[VECTORS]
    (1.0, 1.0)
    """
    overall = reference(sizes, hops)
    out: dict[str, float] = {}
    for kind in set(roles.values()):
        own = {n: x for n, x in sizes.items() if roles.get(n) == kind}
        out[kind] = reference(own, hops) if len(own) >= 3 else overall
    return out


@dataclass(frozen=True)
class Scale:
    """What the rule measures: each variable's gradient per element, its role, and each
    role's reference."""

    sizes: dict[str, float]
    roles: dict[str, str]
    references: dict[str, float]
    #: the reference is the variables nearest the loss (False: the median of all, no graph)
    nearest: bool

    def reference_of(self, name: str) -> float:
        return self.references[self.roles[name]]

    def where(self, name: str) -> str:
        """Whom ``name`` is compared with, in words: its own kind where there are three of it.

        >>> s = Scale({"a": 1.0, "b": 1.0}, {"a": "kernels", "b": "biases"}, {}, nearest=True)
        >>> s.where("a"), Scale(s.sizes, s.roles, {}, nearest=False).where("b")
        ('the variables nearest the loss', 'the median of the variables')
        """
        kind = self.roles[name]
        own = sum(1 for r in self.roles.values() if r == kind) >= 3
        what = kind if own else "variables"
        return f"the {what} nearest the loss" if self.nearest else f"the median of the {what}"


def scale(
    variables: Iterable[VariableReport], graph: GraphDoc | None, hops: Mapping[str, int] | None = None
) -> Scale | None:
    """The rule's measure and references (``hops``: the graph's :func:`hops_to_target`, where
    the caller has them already); None with fewer than three variables that get a gradient:
    below that there is no "rest of the model" to compare with."""
    rows = list(variables)
    sizes = {v.name: s for v in rows if (s := per_element(v)) is not None}
    if len(sizes) < 3:
        return None
    roles = {v.name: role(v.shape) for v in rows if v.name in sizes}
    if hops is None:
        hops = hops_to_target(graph) if graph is not None and graph.edges else None
    return Scale(sizes, roles, references(sizes, roles, hops), bool(hops))


def layer_key(v: VariableReport) -> str:
    """The layer a variable belongs to, by its TensorFlow path ("" for a bare variable).

    >>> layer_key(VariableReport("m.a.bias", "model/dense_1/bias:0", "float32", [3], "connected"))
    'model/dense_1'
    """
    path = v.tf_name.split(":", 1)[0]
    return path.rsplit("/", 1)[0] if "/" in path else ""


def cancelled(
    sizes: Mapping[str, float], rows: Iterable[VariableReport], ref: float | Mapping[str, float]
) -> dict[str, str]:
    """The variables whose gradient is rounding noise next to their own layer's: each one's
    layer-mate whose gradient per element is :data:`CANCELLED_GAP` decades larger or more.

    One layer's variables all receive the same gradient from the layer's output, so a gap that
    wide does not come from depth. It comes from something after the layer that cancels the
    variable exactly: a normalization subtracts what a bias adds, and a softmax ignores a
    shift, so the key projection's bias in attention gets nothing. Only a variable that is also
    :data:`CANCELLED_BELOW` decades under the reference counts. A layer's kernel may sit far
    above its bias because its inputs are huge (an exploding stack), but then the bias is not
    small.

    >>> V = lambda n, g: VariableReport(n, f"dense/{n}", "float32", [1], "connected", grad_norm=g)
    >>> rows = [V("kernel", 0.1), V("bias", 1e-8)]
    >>> cancelled({"kernel": 0.1, "bias": 1e-8}, rows, ref=0.1)
    {'bias': 'kernel'}
    """
    by_layer: dict[str, list[str]] = {}
    for v in rows:
        key = layer_key(v)
        if key and v.name in sizes:
            by_layer.setdefault(key, []).append(v.name)
    out = {}
    for names in by_layer.values():
        top = max(names, key=lambda n: sizes[n])
        for n in names:
            gap = math.log10(sizes[top]) - math.log10(sizes[n])
            own = ref if isinstance(ref, (int, float)) else ref[n]
            if gap >= CANCELLED_GAP and math.log10(own) - math.log10(sizes[n]) >= CANCELLED_BELOW:
                out[n] = top
    return out


def judge_magnitudes(variables: Iterable[VariableReport], graph: GraphDoc | None) -> list[Problem]:
    """Set ``magnitude`` on each variable whose gradient vanishes, explodes or is cancelled;
    the problems, one per verdict, naming every variable it holds. Vanishing and exploding are
    warnings; cancelled is information, since the model trains as its author built it (a stock
    Keras attention layer's key bias is cancelled)."""
    rows = list(variables)
    for v in rows:
        v.magnitude = None
    hops = hops_to_target(graph) if graph is not None and graph.edges else {}
    measured = scale(rows, graph, hops)
    if measured is None:
        return []
    sizes = measured.sizes
    refs = {n: measured.reference_of(n) for n in sizes}
    noise = cancelled(sizes, rows, refs)
    found: dict[str, list[tuple[VariableReport, Magnitude]]] = {}
    for v in rows:
        if v.name not in sizes:
            continue
        m = Magnitude(sizes[v.name], refs[v.name])
        verdict = Kind.CANCELLED if v.name in noise else m.verdict
        if verdict is not None:
            v.magnitude = verdict
            found.setdefault(verdict, []).append((v, m))
    problems = []
    for verdict in (Kind.VANISHING, Kind.EXPLODING):
        flagged = found.get(verdict, [])
        if not flagged:
            continue
        word = "below" if verdict == Kind.VANISHING else "above"
        for v, m in flagged:
            v.explanation = (
                f"its gradient is {m.per_element:.2g} per element, {abs(m.decades):.1f}"
                f" decades {word} the {m.reference:.2g} of {measured.where(v.name)}: "
                + (
                    "too small to train it"
                    if verdict == Kind.VANISHING
                    else "large enough to throw it far off on one step"
                )
            )
        worst = max(flagged, key=lambda vm: abs(vm[1].decades))
        # where the change starts: the flagged variable nearest the loss (without a graph,
        # the worst); named first, so choosing the problem selects it
        start = min(flagged, key=lambda vm: hops.get(vm[0].name, 10**9)) if hops else worst
        n = len(flagged)
        kinds = sorted({measured.roles[v.name] for v, _ in flagged})
        than = " and ".join(f"the {k} nearest the loss" for k in kinds) if measured.nearest else "the median"
        grows = "shrinks" if verdict == Kind.VANISHING else "grows"
        if start[0] is worst[0]:
            where = f"the furthest is {worst[0].name}, at {worst[1].per_element:.2g} per element"
        else:
            where = (
                f"it {grows} past that at {start[0].name} and furthest at {worst[0].name},"
                f" {worst[1].per_element:.2g} per element"
            )
        order = [start[0].name] + [v.name for v, _ in flagged if v is not start[0]]
        problems.append(
            Problem(
                kind=verdict,
                severity=Severity.WARNING,
                op="",
                op_type="",
                message=(
                    f"{n} variable{'s' * (n != 1)} get{'s' * (n == 1)} a gradient more than"
                    f" {DECADES:g} decades {word} that of their own kind (compared with {than}); {where}"
                ),
                variables=order,
                source=start[0].source,
                hint=HINT[verdict],
            )
        )
    quiet = found.get(Kind.CANCELLED, [])
    for v, m in quiet:
        mate = noise[v.name]
        gap = math.log10(sizes[mate]) - math.log10(m.per_element)
        v.explanation = (
            f"its gradient is {m.per_element:.2g} per element, {gap:.1f} decades below"
            f" {mate}'s in the same layer: rounding noise of a gradient that is zero"
            " in exact arithmetic, so it never trains"
        )
    if quiet:
        n = len(quiet)
        problems.append(
            Problem(
                kind=Kind.CANCELLED,
                severity=Severity.INFO,
                op="",
                op_type="",
                message=(
                    f"{n} variable{'s' * (n != 1)} get{'s' * (n == 1)} only rounding noise, at"
                    f" least {CANCELLED_GAP:g} decades below another variable of the same layer:"
                    " something after the layer cancels them"
                ),
                variables=[v.name for v, _ in quiet],
                source=quiet[0][0].source,
                hint=HINT[Kind.CANCELLED],
            )
        )
    if graph is not None:
        _mark_variable_ops(
            graph,
            {v.name: v for verdict in (Kind.VANISHING, Kind.EXPLODING) for v, _ in found.get(verdict, [])},
        )
    return problems


def _mark_variable_ops(graph: GraphDoc, flagged: Mapping[str, VariableReport]) -> None:
    """The variable's own box in the graph carries the verdict, so the graph, DOT, GraphML and
    JSON say what the Variables panel says; the edges keep ``passes``: the gradient arrives."""
    for op in graph.ops:
        v = flagged.get(op.id[4:]) if op.id.startswith("var:") else None
        if v is not None and op.status == Flow.PASSES and v.magnitude is not None:
            op.status, op.message = v.magnitude, v.explanation
