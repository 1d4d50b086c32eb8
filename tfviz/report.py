"""Plain-data results of an analysis.

Everything the GUI, the CLI and the worker exchange is one of these
dataclasses. They hold no TensorFlow objects, so a report can cross a process
boundary as JSON and be rebuilt on the other side unchanged.

>>> r = Report(script="s.py", target="loss", ok=True)
>>> Report.from_dict(r.to_dict()) == r
True
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from tfviz.vocabulary import RAISING, Flow, Kind, Status

#: The fixed vocabulary of reasons a gradient does not arrive (:class:`~tfviz.vocabulary.Kind`).
KINDS: tuple[str, ...] = tuple(Kind)
#: Kinds whose gradient function raises, failing the whole ``tape.gradient`` call.
RAISING_KINDS: frozenset[str] = frozenset(RAISING)
STATUSES: tuple[str, ...] = tuple(Status)
#: Edge statuses beyond the kinds: the gradient passes, or the edge is on no
#: variable-to-target path at all.
EDGE_PASSES: str = Flow.PASSES
EDGE_OFF_PATH: str = Flow.OFF_PATH
#: An on-path edge or op that no gradient reaches, because of a cut further toward the
#: target (its ``cut_at`` names that op): the gradient would pass here, but none arrives.
EDGE_STARVED: str = Flow.STARVED


@dataclass
class Source:
    """A line in the user's own code."""

    file: str
    line: int
    code: str = ""
    #: in a notebook (``line`` counts the joined code cells): the cell's index, the line
    #: within it, and how a user names the cell (``cell 7 [5]``, with its execution count)
    cell: int | None = None
    cell_line: int | None = None
    cell_name: str = ""

    def label(self, shown: Callable[[str], str] | None = None) -> str:
        """Where the line is, as the user names it (``shown``: how a path is written):
        ``file:line``; in a notebook's file, its cell and the line within it; in a cell of the
        IPython session a check ran in, that cell as IPython's tracebacks name it (``Cell
        In[5], line 2``), for its file's name is IPython's own."""
        path = shown(self.file) if shown is not None else self.file
        if self.cell_name and self.cell is None:
            return f"{self.cell_name}, line {self.cell_line}"
        if self.cell_name:
            return f"{path} {self.cell_name}, line {self.cell_line}"
        return f"{path}:{self.line}"


@dataclass
class VariableReport:
    name: str
    tf_name: str
    dtype: str
    shape: list[int | None]
    status: str
    kind: str | None = None
    grad_norm: float | None = None
    blocked_at: list[str] = field(default_factory=list)
    explanation: str = ""
    source: Source | None = None
    #: L2 norm of the variable's value at the step (the gradient's scale is judged against it)
    weight_norm: float | None = None
    #: "vanishing" or "exploding" where the gradient's size is far off the model's (a warning:
    #: the gradient flows, but training this variable will barely move it, or blow it up)
    magnitude: str | None = None


@dataclass
class Problem:
    kind: str
    severity: str
    op: str
    op_type: str
    message: str
    variables: list[str] = field(default_factory=list)
    source: Source | None = None
    hint: str = ""


@dataclass
class TensorInfo:
    dtype: str
    shape: list[int | None] | None


@dataclass
class GraphOp:
    """One op of the traced graph; ``group`` is the function body holding it."""

    id: str
    name: str
    type: str
    scope: str
    group: str = ""
    outputs: list[TensorInfo] = field(default_factory=list)
    source: Source | None = None
    on_path: bool = False
    status: str = EDGE_PASSES
    message: str = ""
    grad_norm: float | None = None
    is_variable: bool = False
    #: status ``starved``: the op, nearest toward the target, where its gradient is cut
    cut_at: str = ""
    #: what the user's code calls the value, when known: a captured tensor's Python path
    #: (``model.layers[0].weights2``, the frozen copy of seed 2)
    label: str = ""


@dataclass
class GraphEdge:
    src: str
    dst: str
    src_output: int
    dst_input: int
    dtype: str
    shape: list[int | None] | None
    status: str = EDGE_OFF_PATH
    grad_norm: float | None = None
    back: bool = False
    #: status ``starved``: the op, nearest toward the target, where the gradient is cut
    cut_at: str = ""
    #: a cut (status a kind) that some variable's gradient needs; False for a cut that
    #: blocks no variable (BatchNorm's moments, a numerically stable loss, shape arithmetic)
    needed: bool = True


@dataclass
class GraphFunction:
    """A nested function body (inner tf.function, cond branch, loop body...)."""

    id: str
    name: str
    kind: str
    parent: str
    call_op: str
    #: the user's line that runs the body (the ``tf.while_loop``, ``tf.cond``, the call)
    source: Source | None = None
    #: the type of the op that runs it (``While``, ``StatelessIf``, ``PartitionedCall``)
    call_type: str = ""


#: the reason of a :class:`ReadNotTrained` weight Keras holds frozen (``trainable = False``)
FROZEN_REASON = "frozen: Keras holds it not trainable (trainable = False), as the script asks"


@dataclass
class ReadNotTrained:
    """A variable the loss reads on purpose without training it (a target network)."""

    name: str
    reason: str
    tf_name: str = ""  # TensorFlow's name (``discriminator/d_conv1/kernel``): names its layers


@dataclass
class GraphDoc:
    ops: list[GraphOp] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    functions: list[GraphFunction] = field(default_factory=list)
    #: name scope -> the Keras layer that opened it (``vq_1/dense_1`` -> ``dense``): the
    #: trace's scope names are made unique per graph and cannot say which layer they are
    layer_scopes: dict[str, str] = field(default_factory=dict)
    #: name scope -> the layer's class and the settings a user gives it (``units``,
    #: ``strides``, ``padding``, ``activation``...), as text
    layer_attributes: dict[str, dict[str, str]] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {"ops": len(self.ops), "edges": len(self.edges), "functions": len(self.functions)}


@dataclass
class WatchedLayer:
    """One layer's gradient norm over a watched run (the root of its variables' squared norms)."""

    name: str
    first: float | None = None
    last: float | None = None
    low: float | None = None
    high: float | None = None


@dataclass
class WatchSummary:
    """What ``check --until`` saw while the program trained, and where it stopped."""

    until: list[str] = field(default_factory=list)
    #: gradient steps watched (the one diagnosed included)
    steps: int = 0
    #: the condition that fired, or None (the program ended, or reached --max-steps)
    fired: str | None = None
    #: the gradient step diagnosed (None: the program ended, there is no step to diagnose)
    step: int | None = None
    #: that step in the program's terms: "Model.fit, epoch 4, batch 27"
    at: str = ""
    detail: str = ""
    #: the sources the condition fired for
    variables: list[str] = field(default_factory=list)
    #: under a tf.distribute strategy, the replicas where it fired ("worker 1 of 2")
    fired_on: list[str] = field(default_factory=list)
    min_norm: float | None = None
    max_norm: float | None = None
    layers: list[WatchedLayer] = field(default_factory=list)
    #: the per-step record (CSV), when one was asked for
    record: str = ""
    #: why that record could not be written
    record_error: str = ""


@dataclass
class Report:
    script: str
    target: str
    ok: bool = False
    tfviz: str = ""
    tensorflow: str = ""
    variables: list[VariableReport] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    graph: GraphDoc = field(default_factory=GraphDoc)
    timings_s: dict[str, float] = field(default_factory=dict)
    targets: list[str] = field(default_factory=list)
    traced: bool = True
    #: variables the loss reads that belong to a separate model not trained in this step
    read_not_trained: list[ReadNotTrained] = field(default_factory=list)
    #: "target" (a function the script names) or "program" (its first gradient step)
    mode: str = "target"
    stdout: str = ""
    stderr: str = ""
    #: what the user should know about how the script was run (a notebook's IPython lines
    #: that were skipped, cells run top to bottom though they were last run out of order)
    notes: list[str] = field(default_factory=list)
    #: ``check --until``: the watched run that led to this step
    watch: WatchSummary | None = None

    def to_dict(self, full_graph: bool = True, strict: bool = False) -> dict[str, Any]:
        """The report as plain data (see :func:`plain`); without ``full_graph``, the graph
        as its counts."""
        with collector_paused():
            return {name: plain(value, strict) for name, value in self.fields(full_graph).items()}

    def to_json(self, full_graph: bool = True, indent: int | None = None) -> str:
        """Strict JSON: a NaN or infinite norm becomes null (its kind says ``nan``).

        >>> text = Report(script="s", target="t", variables=[VariableReport(
        ...     "w", "w", "float32", [], "connected", "nan", float("inf"))]).to_json(indent=2)
        >>> '"grad_norm": null' in text, "Infinity" in text
        (True, False)
        """
        return strict_json(self.fields(full_graph), indent)

    def fields(self, full_graph: bool = True) -> dict[str, Any]:
        """The report's fields by name, as they are (dataclasses); without ``full_graph``,
        the graph as its counts."""
        return {
            f.name: self.graph.counts() if f.name == "graph" and not full_graph else getattr(self, f.name)
            for f in dataclasses.fields(self)
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Report:
        """Rebuild a report, nested dataclasses included, from ``to_dict`` output."""
        with collector_paused():
            return cls._from_dict(d)

    @classmethod
    def _from_dict(cls, d: dict[str, Any]) -> Report:
        return cls(
            **{
                **{k: v for k, v in d.items() if k in _field_names(cls)},
                "variables": [
                    VariableReport(**{**v, "source": _source(v.get("source"))})
                    for v in d.get("variables", [])
                ],
                "problems": [
                    Problem(**{**p, "source": _source(p.get("source"))}) for p in d.get("problems", [])
                ],
                "read_not_trained": [ReadNotTrained(**r) for r in d.get("read_not_trained", [])],
                "graph": _graph(d.get("graph") or {}),
                "watch": _watch(d.get("watch")),
            }
        )


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector while a large tree of new objects is built (a document
    parsed or rebuilt, a report made plain data): its millions of objects, none in a cycle,
    would trigger full collections over all of them again and again, doubling the time and
    holding the interpreter for up to a second each (a 40,000-op report to plain data:
    1.4 s, 0.4 s paused)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def strict_json(value: Any, indent: int | None = None) -> str:
    r"""``json.dumps(plain(value, strict=True), indent=indent)``: strict JSON, in ASCII, of a
    tree of the report's dataclasses, a NaN or infinite float written as null.

    orjson writes it, walking the dataclasses itself: a 500-layer MLP's saved analysis
    (3.4 MB) took 0.25 s as plain data through the json module, and 0.02 s so. What orjson
    will not write (a string with a lone surrogate, as a script's undecodable output can
    hold; an indent other than 2) is written the json module's way.

    >>> strict_json({"norm": float("nan"), "line": Source("ü.py", 3)})
    '{"norm":null,"line":{"file":"\\u00fc.py","line":3,"code":"","cell":null,"cell_line":null,"cell_name":""}}'
    """
    if indent in (None, 2):
        option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
        try:
            text = orjson.dumps(value, default=_listed, option=option).decode()
        except TypeError:  # orjson.JSONEncodeError is one
            pass
        else:
            return text if text.isascii() else _NON_ASCII.sub(_escaped, text)
    return json.dumps(plain(value, strict=True), indent=indent, allow_nan=False)


def _listed(value: Any) -> list[Any]:
    """A tuple orjson leaves to its caller (a named tuple), as the json module writes it."""
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


#: a character JSON in ASCII escapes: only a string's can be outside ASCII
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _escaped(match: re.Match[str]) -> str:
    r"""``\uXXXX``, a pair of them beyond the Basic Multilingual Plane, as the json module escapes.

    >>> _escaped(re.match(".", "😀"))
    '\\ud83d\\ude00'
    """
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


def plain(value: Any, strict: bool = False) -> Any:
    """What ``dataclasses.asdict`` gives, without its deep copy of every leaf: a 20,000-op
    graph took 2.6 s, and every analysis's result is converted so. Dataclasses become dicts,
    lists and tuples stay lists and tuples, leaves are shared. With ``strict``, a NaN or
    infinite float becomes None, as strict JSON needs.

    >>> plain(Source("a.py", 3, "x = 1"))
    {'file': 'a.py', 'line': 3, 'code': 'x = 1', 'cell': None, 'cell_line': None, 'cell_name': ''}
    >>> plain({"norms": (1.0, float("inf"))}, strict=True)
    {'norms': (1.0, None)}
    """
    kind = type(value)
    if kind is float:
        return None if strict and not math.isfinite(value) else value
    shared = _SHARED_STRICT if strict else _SHARED
    if kind in shared:  # leaves inline below too: a call per leaf was most of the time
        return value
    if kind is list:
        return [v if type(v) in shared else plain(v, strict) for v in value]
    names = _PLAIN_FIELDS.get(kind)
    if names is None:
        if isinstance(value, (str, int)):  # a (str, Enum) member, an IntEnum
            return value
        if isinstance(value, list):
            return [plain(v, strict) for v in value]
        if isinstance(value, tuple):
            items = [plain(v, strict) for v in value]
            return kind(*items) if hasattr(value, "_fields") else kind(items)
        if isinstance(value, dict):
            return {plain(k, strict): plain(v, strict) for k, v in value.items()}
        if not dataclasses.is_dataclass(value) or isinstance(value, type):
            return copy.deepcopy(value)
        names = _PLAIN_FIELDS[kind] = tuple(f.name for f in dataclasses.fields(value))
    return {name: v if type(v := getattr(value, name)) in shared else plain(v, strict) for name in names}


_PLAIN_FIELDS: dict[type, tuple[str, ...]] = {}
#: leaves :func:`plain` shares as they are (with ``strict``, a float may become None)
_SHARED = frozenset({str, int, bool, float, type(None)})
_SHARED_STRICT = _SHARED - {float}


def _watch(d: dict[str, Any] | None) -> WatchSummary | None:
    if not d:
        return None
    return WatchSummary(**{**d, "layers": [WatchedLayer(**x) for x in d.get("layers", [])]})


def _source(d: dict[str, Any] | None) -> Source | None:
    return Source(**d) if d else None


def _list(d: dict[str, Any], key: str) -> list[Any]:
    """A list field, or [] where the document holds counts instead (compact JSON)."""
    value = d.get(key)
    return value if isinstance(value, list) else []


def _graph(g: dict[str, Any]) -> GraphDoc:
    return GraphDoc(
        ops=[
            GraphOp(
                **{
                    **o,
                    "outputs": [TensorInfo(**t) for t in o.get("outputs", [])],
                    "source": _source(o.get("source")),
                }
            )
            for o in _list(g, "ops")
        ],
        edges=[GraphEdge(**e) for e in _list(g, "edges")],
        functions=[GraphFunction(**{**f, "source": _source(f.get("source"))}) for f in _list(g, "functions")],
        layer_scopes=dict(g.get("layer_scopes") or {}),
        layer_attributes={k: dict(v) for k, v in (g.get("layer_attributes") or {}).items()},
    )


def _field_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}
