"""A saved analysis: the JSON document ``tfviz export -o x.json`` and ``check --graph`` write.

The document is :meth:`Report.to_dict` (full graph) with a ``schema_version`` in front;
``tfviz/schemas/tfviz-analysis.schema.json`` describes it. Reading one back never runs code
and never unpickles: the file is parsed as strict JSON (size-capped), every field is
checked against the report's own dataclasses (types, bounds, vocabularies, references
between ops and edges, the nesting of groups), and only then rebuilt as a
:class:`Report`. Anything else is an :class:`AnalysisFileError` with one clear sentence.

Checking is linear in the size of the file: each dataclass's field table (type hints,
defaults, vocabularies) is worked out once and cached, not per object, and documents past
:data:`MAX_OPS`, :data:`MAX_VARIABLES` or :data:`MAX_NESTING` are refused before their
fields are checked. ``progress`` and ``cancelled`` let a caller on another thread (the
window) show how far it got and stop it; the big lists are parsed and checked in
slices, so that thread hands the interpreter back often.

>>> from tfviz.report import Report
>>> r = Report(script="s.py", target="loss", ok=True)
>>> parse_analysis(analysis_json(r)) == r
True
"""

from __future__ import annotations

import dataclasses
import json
import json.decoder
import math
import os
import types
import typing
from collections.abc import Callable
from typing import Any

from tfviz.report import (
    EDGE_OFF_PATH,
    EDGE_PASSES,
    EDGE_STARVED,
    KINDS,
    STATUSES,
    GraphDoc,
    GraphEdge,
    GraphFunction,
    GraphOp,
    Problem,
    ReadNotTrained,
    Report,
    VariableReport,
    collector_paused,
    strict_json,
)
from tfviz.safefile import NotReadable, TooLarge, read_regular

#: Bumped when a field changes meaning or is removed; adding a field keeps it.
SCHEMA_VERSION = 1
#: The largest file read (a fully expanded ResNet50 export is a few MB).
MAX_BYTES = 256 * 2**20
#: Whole numbers beyond this (ports, lines, dimensions) are not from a real analysis.
MAX_INT = 2**53
#: Longer strings are not from a real analysis (program output is capped far below this).
MAX_STR = 16 * 2**20
#: The most graph ops a saved analysis may hold (ResNet50 fully traced has about 3,100).
MAX_OPS = 2_000_000
#: The most variables a saved analysis may list (400,000 with their source lines are 110 MB).
MAX_VARIABLES = 1_000_000
#: The most boxes one op may sit in: function bodies inside function bodies and name-scope
#: levels, counted together (a deep Keras model has about 15). The window walks this tree.
MAX_NESTING = 64

#: ``progress(fraction, stage)``: how far a load has got, 0 to 1, and what it is doing.
Progress = Callable[[float, str], None]

OP_STATUSES = frozenset({EDGE_PASSES, EDGE_OFF_PATH, EDGE_STARVED, *KINDS})
_VOCAB: dict[tuple[str, str], frozenset[str | None]] = {
    ("VariableReport", "status"): frozenset(STATUSES),
    ("VariableReport", "kind"): frozenset({None, *KINDS}),
    ("VariableReport", "magnitude"): frozenset({None, "vanishing", "exploding", "cancelled"}),
    ("Problem", "kind"): frozenset(KINDS),
    ("Problem", "severity"): frozenset({"error", "warning", "info"}),
    ("GraphOp", "status"): OP_STATUSES,
    ("GraphEdge", "status"): OP_STATUSES,
    ("Report", "mode"): frozenset({"target", "program"}),
}
#: The long lists: checked in slices, each slice counted for ``progress`` and ``cancelled``.
_COUNTED: dict[tuple[type, str], type] = {
    (Report, "variables"): VariableReport,
    (Report, "problems"): Problem,
    (Report, "read_not_trained"): ReadNotTrained,
    (GraphDoc, "ops"): GraphOp,
    (GraphDoc, "edges"): GraphEdge,
    (GraphDoc, "functions"): GraphFunction,
}
_SLICE = 2048
#: The share of a load's progress that reading and parsing take; checking takes the rest.
_READ, _PARSE = 0.03, 0.45


class AnalysisFileError(ValueError):
    """The file is not a saved tfviz analysis this version can show."""


class LoadCancelled(Exception):
    """``cancelled()`` said stop: the load was abandoned part-way, nothing was returned."""


def analysis_document(report: Report) -> dict[str, Any]:
    """The saved-analysis document: ``schema_version``, then the report with its full graph."""
    return {"schema_version": SCHEMA_VERSION, **report.to_dict(full_graph=True, strict=True)}


def analysis_json(report: Report) -> str:
    """:func:`analysis_document` as text, written from the report's dataclasses as they are,
    not made plain data first."""
    return analysis_json_of(report.fields())


def analysis_json_of(data: dict[str, Any]) -> str:
    """The saved-analysis document of a report's fields with its full graph, as text
    (:func:`~tfviz.report.strict_json`): the report's dataclasses, or the plain data the
    worker sent (``Report.to_dict()``), written without turning it into dataclasses and
    back: for a large model that was most of writing ``--graph``."""
    return strict_json({"schema_version": SCHEMA_VERSION, **data})


def write_analysis(path: str, text: str) -> str | None:
    """Write the saved-analysis document ``text`` to ``path``, complete or not at all and
    never over a FIFO or a device: None, or the system's words for why it could not (the
    caller says it in one line, and leaves the exit code to the analysis)."""
    from tfviz.outputs import replacing

    try:
        with replacing(path) as fh:
            fh.write(text)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def load_analysis(
    path: str | os.PathLike[str],
    max_bytes: int = MAX_BYTES,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Report:
    """Read a saved analysis from ``path``; raises :class:`AnalysisFileError`, or
    :class:`LoadCancelled` once ``cancelled()`` is true."""
    run = _Run(progress, cancelled)
    run.stage("reading the file", 0.0)
    try:
        data = read_regular(path, max_bytes)
    except TooLarge:
        raise AnalysisFileError(
            f"{path} is larger than {max_bytes // 2**20} MB; it is not a tfviz analysis this version can open"
        ) from None
    except NotReadable:  # a FIFO or a device blocks or never ends
        raise AnalysisFileError(f"{path} is not a regular file") from None
    except OSError as exc:
        raise AnalysisFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    return _parse(data, str(path), run)


def parse_analysis(
    data: str | bytes,
    name: str = "the file",
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Report:
    """Check and rebuild a saved analysis from its text; raises :class:`AnalysisFileError`."""
    return _parse(data, name, _Run(progress, cancelled))


def _parse(data: str | bytes, name: str, run: _Run) -> Report:
    with collector_paused():
        return _parse_and_check(data, name, run)


def _parse_and_check(data: str | bytes, name: str, run: _Run) -> Report:
    run.stage("parsing the JSON", _READ)
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        del data
        doc = _loads(text, run)
    except UnicodeDecodeError:
        raise AnalysisFileError(f"{name} is not text (not UTF-8): not a tfviz analysis") from None
    except RecursionError:
        raise AnalysisFileError(f"{name} is nested too deeply to be a tfviz analysis") from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, an integer of thousands of digits
        raise AnalysisFileError(f"{name} is not valid JSON: {exc}") from None
    del text
    run.consume = True  # the parsed document is ours: free it slice by slice as it is checked
    return _from_document(doc, name, run)


def report_from_document(
    doc: Any,
    name: str = "the file",
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Report:
    """Check and rebuild a saved analysis from its parsed JSON (``doc`` is left as it was)."""
    with collector_paused():
        return _from_document(doc, name, _Run(progress, cancelled))


def _from_document(doc: Any, name: str, run: _Run) -> Report:
    if not isinstance(doc, dict) or not ("schema_version" in doc or "tfviz" in doc):
        raise AnalysisFileError(f"{name} is JSON but not a tfviz analysis (no schema_version)")
    version = doc.get("schema_version", SCHEMA_VERSION)  # check --graph before versioning: same shape
    if type(version) is not int or version < 1:
        raise AnalysisFileError(f"{name}: schema_version must be a whole number, got {_short(version)}")
    if version > SCHEMA_VERSION:
        raise AnalysisFileError(
            f"{name} was written by a newer tfviz (schema {version}); this"
            f" tfviz reads schema {SCHEMA_VERSION}: upgrade tfviz to open it"
        )
    graph = doc.get("graph")
    if isinstance(graph, dict) and type(graph.get("ops")) is int:
        raise AnalysisFileError(
            f"{name} holds the graph's counts, not the graph (tfviz check --json"
            " output): save it with tfviz export -o FILE.json or check --graph"
        )
    run.total = _check_limits(doc, graph, name)
    run.stage("checking the analysis", _PARSE)
    try:
        report: Report = _checker(Report)(doc, run)
        _check_graph(report.graph)
    except _Invalid as exc:
        raise AnalysisFileError(f"{name} is not a valid tfviz analysis: {exc}") from None
    run.report(1.0)
    return report


def _check_limits(doc: dict[str, Any], graph: Any, name: str) -> int:
    """Refuse a document past the documented limits before any field is checked; the
    number of objects in its long lists (the progress total)."""
    lists = [doc.get("variables"), doc.get("problems"), doc.get("read_not_trained")]
    if isinstance(graph, dict):
        lists += [graph.get("ops"), graph.get("edges"), graph.get("functions")]
    n = [len(x) if isinstance(x, list) else 0 for x in lists]
    if n[0] > MAX_VARIABLES:
        raise AnalysisFileError(
            f"{name} lists {n[0]:,} variables; tfviz opens analyses of at most {MAX_VARIABLES:,} variables"
        )
    if len(n) > 3 and n[3] > MAX_OPS:
        raise AnalysisFileError(
            f"{name} holds a graph of {n[3]:,} ops; tfviz opens graphs of at most {MAX_OPS:,} ops"
        )
    return sum(n)


# -- progress and cancelling --------------------------------------------------------------


class _Run:
    """One load's ``progress`` and ``cancelled`` callbacks, and how far it has got."""

    __slots__ = ("progress", "cancelled", "total", "done", "base", "name", "consume")

    def __init__(self, progress: Progress | None, cancelled: Callable[[], bool] | None) -> None:
        self.progress, self.cancelled = progress, cancelled
        self.total, self.done, self.base, self.name = 0, 0, 0.0, ""
        self.consume = False

    def stage(self, name: str, base: float) -> None:
        self.name, self.base, self.done = name, base, 0
        self.report(base)

    def report(self, fraction: float) -> None:
        if self.cancelled is not None and self.cancelled():
            raise LoadCancelled
        if self.progress is not None:
            self.progress(min(1.0, fraction), self.name)

    def parsed(self, at: int, size: int) -> None:
        self.report(_READ + (_PARSE - _READ) * at / max(1, size))

    def checked(self, n: int) -> None:
        self.done += n
        self.report(_PARSE + (1 - _PARSE) * self.done / max(1, self.total))


# -- parsing ----------------------------------------------------------------------------


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not allowed (norms that are not finite are written as null)")


# Both are the json module's own, left out of its stubs.
_SPACE = json.decoder.WHITESPACE.match  # type: ignore[attr-defined]
_STRING: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
#: Objects and lists this close to the top are parsed here, key by key and element by
#: element (the long lists are ``variables`` at depth 1 and ``graph.ops`` at depth 2);
#: each list element, and everything deeper, by the C scanner in one call.
_SHALLOW = 3


def _loads(text: str, run: _Run) -> Any:
    """``json.loads(text)`` with the same strictness and errors, parsed element by element
    down to the long lists: a single C call over 100 MB would hold the interpreter for
    seconds (the window would freeze), and could be neither followed nor cancelled."""
    size = len(text)
    seen = [0]
    # its key memo is per call
    scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder(parse_constant=_no_constant).scan_once  # type: ignore[attr-defined]

    def err(msg: str, at: int) -> json.JSONDecodeError:
        return json.JSONDecodeError(msg, text, at)

    def value(at: int, depth: int) -> tuple[Any, int]:
        at = _SPACE(text, at).end()
        ch = text[at : at + 1]
        if depth < _SHALLOW - 1 and ch == "{":
            return obj(at + 1, depth + 1)
        if depth < _SHALLOW and ch == "[":
            return arr(at + 1)
        return element(at)

    def element(at: int) -> tuple[Any, int]:
        try:
            return scan(text, at)
        except StopIteration as exc:
            raise err("Expecting value", exc.value) from None

    def obj(at: int, depth: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        at = _SPACE(text, at).end()
        if text[at : at + 1] == "}":
            return out, at + 1
        while True:
            if text[at : at + 1] != '"':
                raise err("Expecting property name enclosed in double quotes", at)
            key, at = _STRING(text, at + 1)
            at = _SPACE(text, at).end()
            if text[at : at + 1] != ":":
                raise err("Expecting ':' delimiter", at)
            out[key], at = value(at + 1, depth)
            at = _SPACE(text, at).end()
            ch = text[at : at + 1]
            if ch == "}":
                return out, at + 1
            if ch != ",":
                raise err("Expecting ',' delimiter", at)
            at = _SPACE(text, at + 1).end()

    def arr(at: int) -> tuple[list[Any], int]:
        out: list[Any] = []
        at = _SPACE(text, at).end()
        if text[at : at + 1] == "]":
            return out, at + 1
        while True:
            item, at = element(_SPACE(text, at).end())
            out.append(item)
            seen[0] += 1
            if not seen[0] % _SLICE:
                run.parsed(at, size)
            at = _SPACE(text, at).end()
            ch = text[at : at + 1]
            if ch == "]":
                return out, at + 1
            if ch != ",":
                raise err("Expecting ',' delimiter", at)
            at += 1

    doc, end = value(0, 0)
    end = _SPACE(text, end).end()
    if end != size:
        raise err("Extra data", end)
    return doc


# -- checking ---------------------------------------------------------------------------


class _Invalid(Exception):
    """What is wrong (``what``) and where (``path``, built innermost first on the way out)."""

    def __init__(self, what: str, located: bool = True) -> None:
        super().__init__(what)
        self.what, self.located = what, located
        self.path: list[str] = []

    def at(self, part: str) -> _Invalid:
        self.path.append(part)
        return self

    def __str__(self) -> str:
        where = ""
        for part in reversed(self.path):
            where += part if part.startswith("[") or not where else "." + part
        return f"{where or 'the document'} {self.what}" if self.located else self.what


Check = Callable[[Any, _Run], Any]
_CHECKERS: dict[Any, Check] = {}
#: Per dataclass: (field, checker, required, vocabulary) for each field, built once.
_TABLES: dict[type, tuple[tuple[str, Check, bool, frozenset[str | None] | None], ...]] = {}
_ABSENT = object()


def _checker(hint: Any) -> Check:
    """The checker of values of type ``hint``, compiled once per type and cached: a
    dataclass's becomes its object's checked dataclass, unknown keys dropped."""
    check = _CHECKERS.get(hint)
    if check is None:
        check = _CHECKERS[hint] = _compile(hint)
    return check


def _table(cls: type) -> tuple[tuple[str, Check, bool, frozenset[str | None] | None], ...]:
    """``cls``'s field table; its type hints are resolved here, once per class."""
    table = _TABLES.get(cls)
    if table is None:
        hints = typing.get_type_hints(cls)
        rows = []
        for f in dataclasses.fields(cls):
            key = (cls.__name__, f.name)
            counted = _COUNTED.get((cls, f.name))
            check = (
                _LINE
                if key == ("Source", "line")
                else _counted_list(_checker(counted))
                if counted is not None
                else _checker(hints[f.name])
            )
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            rows.append((f.name, check, required, _VOCAB.get(key)))
        table = _TABLES[cls] = tuple(rows)
    return table


def _compile(hint: Any) -> Check:
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        inner_check = _checker(inner)

        def optional(value: Any, run: _Run) -> Any:
            return None if value is None else inner_check(value, run)

        return optional
    if origin is list:
        return _list(_checker(args[0]))
    if origin is dict:
        if args[0] is not str:  # pragma: no cover - a new dataclass field
            raise TypeError(f"unexpected key type {args[0]!r}")
        item = _checker(args[1])

        def mapping(value: Any, run: _Run) -> dict[str, Any]:
            if not isinstance(value, dict):
                raise _Invalid("should be an object")
            out = {}
            for k, v in value.items():
                if not isinstance(k, str):
                    raise _Invalid("has a key that is not a string")
                try:
                    out[k] = item(v, run)
                except _Invalid as exc:
                    raise exc.at(k) from None
            return out

        return mapping
    scalar = _SCALARS.get(hint)
    if scalar is None:  # pragma: no cover - a new dataclass field
        raise TypeError(f"unexpected field type {hint!r}")
    return scalar


def _dataclass(cls: type) -> Check:
    def check(value: Any, run: _Run) -> Any:
        if not isinstance(value, dict):
            raise _Invalid("should be an object")
        fields = {}
        for name, sub, required, vocab in table:
            x = value.get(name, _ABSENT)
            if x is _ABSENT:
                if required:
                    raise _Invalid(f"lacks {name!r}")
                continue
            try:
                x = sub(x, run)
            except _Invalid as exc:
                raise exc.at(name) from None
            if vocab is not None and x not in vocab:
                raise _Invalid(f"is {_short(x)}, not one of tfviz's values").at(name)
            fields[name] = x
        return cls(**fields)

    table = _table(cls)
    return check


def _list(item: Check) -> Check:
    def check(value: Any, run: _Run) -> list[Any]:
        if not isinstance(value, list):
            raise _Invalid("should be a list")
        try:
            return [item(v, run) for v in value]
        except _Invalid:
            _locate(value, 0, item, run)
            raise  # pragma: no cover - _locate raises

    return check


def _counted_list(item: Check) -> Check:
    """A long list's checker: slice by slice, each counted (progress, cancelling) and, in
    a document this module parsed itself, released once checked (freeing 100 MB of
    parsed JSON at the end would be one long pause)."""

    def check(value: Any, run: _Run) -> list[Any]:
        if not isinstance(value, list):
            raise _Invalid("should be a list")
        out: list[Any] = []
        for start in range(0, len(value), _SLICE):
            part = value[start : start + _SLICE]
            try:
                out += [item(v, run) for v in part]
            except _Invalid:
                _locate(part, start, item, run)
            if run.consume:
                value[start : start + len(part)] = [None] * len(part)
            del part
            run.checked(min(_SLICE, len(value) - start))
        return out

    return check


def _locate(values: list[Any], offset: int, item: Check, run: _Run) -> None:
    """Raise the first element's error with its index (only once a list has failed)."""
    for i, v in enumerate(values):
        try:
            item(v, run)
        except _Invalid as exc:
            raise exc.at(f"[{offset + i}]") from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _str(value: Any, run: _Run) -> str:
    if not isinstance(value, str):
        raise _Invalid("should be a string")
    if len(value) > MAX_STR:
        raise _Invalid(f"is a string of {len(value)} characters")
    return value


def _bool(value: Any, run: _Run) -> bool:
    if not isinstance(value, bool):
        raise _Invalid("should be true or false")
    return value


def _int(value: Any, run: _Run) -> int:
    if type(value) is not int or not -MAX_INT <= value <= MAX_INT:
        raise _Invalid(f"should be a whole number of at most {MAX_INT}")
    return value


def _float(value: Any, run: _Run) -> float:
    t = type(value)
    if t is float and math.isfinite(value):
        return typing.cast(float, value)
    if t is int and -MAX_INT <= value <= MAX_INT:
        return float(value)
    raise _Invalid("should be a finite number")


def _line(value: Any, run: _Run) -> int:
    if type(value) is not int or not 0 <= value < 2**31:
        raise _Invalid("is not a line number")
    return value


_LINE: Check = _line
_SCALARS: dict[Any, Check] = {str: _str, bool: _bool, int: _int, float: _float}


def _check_graph(g: GraphDoc) -> None:
    """Edges join ops that exist, op ids are unique (the view indexes by them), and no op
    sits in more than :data:`MAX_NESTING` boxes (the window's group tree follows them)."""
    ops: dict[str, GraphOp] = {}
    for op in g.ops:
        if op.id in ops:
            raise _Invalid(f"op id {_short(op.id)} appears twice", located=False)
        ops[op.id] = op
    for i, e in enumerate(g.edges):
        for end in (e.src, e.dst):
            if end not in ops:
                raise (
                    _Invalid(f"joins {_short(end)}, which is not an op of the graph")
                    .at(f"[{i}]")
                    .at("edges")
                    .at("graph")
                )
    fns = {f.id: f for f in g.functions}
    for op in g.ops:
        if op.group and op.group not in fns:
            raise _Invalid(
                f"op {_short(op.id)} is in group {_short(op.group)}, which is not a function of the graph",
                located=False,
            )
    depth: dict[str, int] = {"": 0}

    def fn_depth(fid: str) -> int:
        """Boxes around a function body's ops: its ancestors' boxes, each body's own box and
        its call op's name scopes; iterative, so a chain or a loop of parents cannot recurse."""
        chain: list[str] = []
        x = fid
        while x not in depth:
            if x in chain or len(chain) > MAX_NESTING:
                raise _Invalid(
                    f"function {_short(fid)} is nested more than {MAX_NESTING} deep"
                    " (or in a loop of parents)",
                    located=False,
                )
            chain.append(x)
            fn = fns.get(x)
            x = fn.parent if fn is not None and fn.parent in fns else ""
        d = depth[x]
        for y in reversed(chain):
            fn = fns[y]
            call = ops.get(fn.call_op) or ops.get(f"{fn.parent}/{fn.call_op}")
            d += 1 + (_levels(call.scope) if call is not None else 0)
            depth[y] = d
        return d

    for f in g.functions:
        if fn_depth(f.id) > MAX_NESTING:
            raise _Invalid(
                f"function {_short(f.id)} is nested more than {MAX_NESTING} deep"
                " (function bodies and name scopes)",
                located=False,
            )
    for op in g.ops:
        if fn_depth(op.group) + _levels(op.scope) > MAX_NESTING:
            raise _Invalid(
                f"op {_short(op.id)} is nested more than {MAX_NESTING} deep"
                " (function bodies and name scopes)",
                located=False,
            )


def _levels(scope: str) -> int:
    return scope.count("/") + 1 if scope else 0
