"""A saved analysis: the JSON document ``tfviz export -o x.json`` and ``check --graph`` write.

The document is :meth:`Report.to_dict` (full graph) with a ``schema_version`` in front;
``tfviz/schemas/tfviz-analysis.schema.json`` describes it. Reading one back never runs code
and never unpickles: the file is parsed as strict JSON (size-capped), validated against
that schema itself (types, bounds, vocabularies) by a compiled validator (fastjsonschema),
checked here for what a schema cannot say (edges join ops that exist, op ids are unique,
groups are functions of the graph, nesting is bounded), and only then rebuilt as a
:class:`Report`. Anything else is an :class:`AnalysisFileError` with one clear sentence
that says where in the document it is.

Checking is linear in the size of the file. Documents past :data:`MAX_OPS`,
:data:`MAX_VARIABLES` or :data:`MAX_NESTING` are refused before their fields are checked.
``progress`` and ``cancelled`` let a caller on another thread (the window) show how far
it got and stop it; the long lists are parsed, validated and built in slices, so that
thread hands the interpreter back often.

>>> from tfviz.report import Report
>>> r = Report(script="s.py", target="loss", ok=True)
>>> parse_analysis(analysis_json(r)) == r
True
"""

from __future__ import annotations

import dataclasses
import functools
import json
import json.decoder
import math
import os
import types
import typing
from collections.abc import Callable
from typing import Any

from tfviz import schemas
from tfviz.report import (
    GraphDoc,
    GraphEdge,
    GraphFunction,
    GraphOp,
    Problem,
    ReadNotTrained,
    Report,
    Source,
    TensorInfo,
    VariableReport,
    WatchedLayer,
    WatchSummary,
    collector_paused,
    strict_json,
)
from tfviz.safefile import NotReadable, TooLarge, read_regular

#: Bumped when a field changes meaning or is removed; adding a field keeps it.
SCHEMA_VERSION = 1
#: The largest file read (a fully expanded ResNet50 export is a few MB).
MAX_BYTES = 256 * 2**20
#: Whole numbers beyond this (ports, lines, dimensions) are not from a real analysis; the
#: schema says so (and that strings are at most 16 Mi characters: program output is capped
#: far below that).
MAX_INT = 2**53
#: The most graph ops a saved analysis may hold (ResNet50 fully traced has about 3,100).
MAX_OPS = 2_000_000
#: The most variables a saved analysis may list (400,000 with their source lines are 110 MB).
MAX_VARIABLES = 1_000_000
#: The most boxes one op may sit in: function bodies inside function bodies and name-scope
#: levels, counted together (a deep Keras model has about 15). The window walks this tree.
MAX_NESTING = 64

#: ``progress(fraction, stage)``: how far a load has got, 0 to 1, and what it is doing.
Progress = Callable[[float, str], None]

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
        report = _check(doc, run)
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


# -- checking: the schema ----------------------------------------------------------------

#: Where each of the report's dataclasses is described in the schema (a JSON pointer).
SCHEMA_AT: dict[type, str] = {
    Report: "",
    Source: "/$defs/source",
    VariableReport: "/$defs/variable",
    Problem: "/$defs/problem",
    TensorInfo: "/$defs/tensor",
    GraphOp: "/$defs/op",
    GraphEdge: "/$defs/edge",
    GraphFunction: "/$defs/function",
    GraphDoc: "/$defs/graph",
    ReadNotTrained: "/properties/read_not_trained/items",
    WatchSummary: "/properties/watch",
    WatchedLayer: "/properties/watch/properties/layers/items",
}
#: The long lists (their place in the document, their elements' class): each element is
#: checked on its own, slice by slice, counted for ``progress`` and ``cancelled``.
_LONG: tuple[tuple[str, str, type], ...] = (
    ("", "variables", VariableReport),
    ("", "problems", Problem),
    ("", "read_not_trained", ReadNotTrained),
    ("graph", "ops", GraphOp),
    ("graph", "edges", GraphEdge),
    ("graph", "functions", GraphFunction),
)


def reading_schema() -> dict[str, Any]:
    """The shipped schema as a reader applies it: each object need hold only what its
    dataclass cannot default (tfviz writes every property; older files, written before
    ``schema_version`` and ``ok`` were, still open)."""
    schema = schemas.load("analysis")
    for key in ("$schema", "$id"):  # compiled as it stands, nothing fetched
        schema.pop(key, None)
    for cls, pointer in SCHEMA_AT.items():
        node = _at(schema, pointer)
        needed = [f.name for f in dataclasses.fields(cls) if _required(f)]
        if needed:
            node["required"] = needed
        else:
            node.pop("required", None)
    return schema


def _at(schema: dict[str, Any], pointer: str) -> dict[str, Any]:
    node = schema
    for part in pointer.split("/")[1:]:
        node = node[part]
    return node


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


@functools.cache
def _validator(cls: type) -> Callable[[Any], Any]:
    """The compiled validator of one ``cls`` object (``Report``: the document without its
    long lists), made once per process, from the reading schema read once."""
    import fastjsonschema

    schema = _reading()
    node = schema if cls is Report else {**_at(schema, SCHEMA_AT[cls]), "$defs": schema["$defs"]}
    validate: Callable[[Any], Any] = fastjsonschema.compile(node, handlers={}, use_default=False)
    return validate


@functools.cache
def _reading() -> dict[str, Any]:
    return reading_schema()


def _check(doc: dict[str, Any], run: _Run) -> Report:
    """Validate ``doc`` against the schema and build its report: the document without its
    long lists at once, then each long list slice by slice."""
    import fastjsonschema

    top = dict(doc)
    graph = top.get("graph")
    if isinstance(graph, dict):
        graph = top["graph"] = dict(graph)
    long: list[tuple[str, str, list[Any], type]] = []  # (holder, key, the list, its class)
    for parent, key, cls in _LONG:
        holder = graph if parent else top
        if isinstance(holder, dict) and isinstance(holder.get(key), list):
            long.append((parent, key, holder[key], cls))
            holder[key] = []  # validated and built on its own
    try:
        _validator(Report)(top)
    except fastjsonschema.JsonSchemaValueException as exc:
        raise _invalid(exc, "") from None
    report: Report = _builder(Report)(top)
    for parent, key, values, cls in long:
        built = _checked_list(values, f"{parent}.{key}" if parent else key, cls, run)
        setattr(report.graph if parent else report, key, built)
    return report


def _checked_list(values: list[Any], where: str, cls: type, run: _Run) -> list[Any]:
    """A long list's objects, validated and built slice by slice, each slice counted and,
    in a document this module parsed itself, released once built (freeing 100 MB of
    parsed JSON at the end would be one long pause)."""
    import fastjsonschema

    validate, build = _validator(cls), _builder(cls)
    out: list[Any] = []
    for start in range(0, len(values), _SLICE):
        part = values[start : start + _SLICE]
        try:
            out += [build(validate(v)) for v in part]
        except fastjsonschema.JsonSchemaValueException:
            for i, v in enumerate(part):
                try:
                    validate(v)
                except fastjsonschema.JsonSchemaValueException as exc:
                    raise _invalid(exc, f"{where}[{start + i}]") from None
            raise  # pragma: no cover - one of them failed
        if run.consume:
            values[start : start + len(part)] = [None] * len(part)
        del part
        run.checked(min(_SLICE, len(values) - start))
    return out


class _Invalid(Exception):
    """What is wrong (``what``) and where (``where``, a path into the document)."""

    def __init__(self, what: str, where: str = "", located: bool = True) -> None:
        super().__init__(what)
        self.what, self.where, self.located = what, where, located

    def __str__(self) -> str:
        return f"{self.where or 'the document'} {self.what}" if self.located else self.what


#: What each JSON type is called when a value is not one.
_SHOULD_BE = {
    "object": "should be an object",
    "array": "should be a list",
    "string": "should be a string",
    "boolean": "should be true or false",
    "integer": f"should be a whole number of at most {MAX_INT}",
    "number": "should be a finite number",
}


def _invalid(exc: Any, prefix: str) -> _Invalid:
    """The validator's error as one located sentence: ``exc`` is fastjsonschema's
    (``name`` is ``data.graph.ops[0]``-like), ``prefix`` where its object sits."""
    where = (prefix + exc.name[len("data") :]).lstrip(".")
    return _Invalid(_what(exc.rule, exc.rule_definition, exc.value, where, exc.message), where)


def _what(rule: str, definition: Any, value: Any, where: str, message: str) -> str:
    if rule == "required":
        return f"lacks {next(k for k in definition if k not in value)!r}"
    if rule in ("enum", "const"):
        return f"is {_short(value)}, not one of tfviz's values"
    if rule == "type":
        kinds = [definition] if isinstance(definition, str) else list(definition)
        return _SHOULD_BE.get(next((k for k in kinds if k != "null"), ""), "has the wrong type")
    if rule in ("minimum", "maximum"):
        if isinstance(value, float) and not math.isfinite(value):
            return "should be a finite number"
        if where.endswith(".line"):
            return "is not a line number"
        if type(value) is int and abs(value) > MAX_INT:
            return _SHOULD_BE["integer"]
        return f"is {_short(value)}, {'below' if rule == 'minimum' else 'above'} {definition}"
    if rule == "maxLength":
        return f"is a string of {len(value)} characters"
    if rule == "anyOf":  # a vocabulary or null (a variable's kind): say what the vocabulary says
        branches = [b for b in definition if b != {"type": "null"}]
        if len(branches) == 1:
            if "enum" in branches[0]:
                return _what("enum", branches[0]["enum"], value, where, message)
            if "type" in branches[0]:
                return _what("type", branches[0]["type"], value, where, message)
    return message.split(" ", 1)[-1]  # the validator's own words, less its "data.x"


# -- building -----------------------------------------------------------------------------

_BUILDERS: dict[type, Callable[[dict[str, Any]], Any]] = {}
_ABSENT = object()


def _builder(cls: type) -> Callable[[dict[str, Any]], Any]:
    """The builder of ``cls`` from its validated object: unknown keys dropped, nested
    objects built, numbers made the field's type (JSON's 1 for a float field, 1.0 for an
    integer one). Its type hints are resolved here, once per class."""
    build = _BUILDERS.get(cls)
    if build is None:
        hints = typing.get_type_hints(cls)
        names = frozenset(f.name for f in dataclasses.fields(cls))
        converted = tuple(
            (name, conv) for name in sorted(names) if (conv := _conversion(hints[name])) is not None
        )

        def build(value: dict[str, Any]) -> Any:
            kw = dict(value) if value.keys() <= names else {k: v for k, v in value.items() if k in names}
            for name, conv in converted:
                x = kw.get(name)
                if x is not None:
                    kw[name] = conv(x)
            return cls(**kw)

        _BUILDERS[cls] = build
    return build


def _conversion(hint: Any) -> Callable[[Any], Any] | None:
    """How a validated JSON value becomes a ``hint``; None where it already is one."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _builder(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        return _conversion(inner)
    if origin is list:
        if args[0] == int | None:  # a shape: converted only where a dimension was written 4.0
            return _dimensions
        item = _conversion(args[0])
        if item is None:
            return None
        each = item
        return lambda xs: [x if x is None else each(x) for x in xs]
    if origin is dict:
        value = _conversion(args[1])
        if value is None:
            return None
        each = value
        return lambda d: {k: x if x is None else each(x) for k, x in d.items()}
    if hint is float:
        return _float
    if hint is int:
        return _int
    return None


def _float(x: Any) -> float:
    return x if type(x) is float else float(x)


def _int(x: Any) -> int:
    return x if type(x) is int else int(x)


def _dimensions(xs: list[Any]) -> list[Any]:
    return xs if float not in set(map(type, xs)) else [x if x is None else int(x) for x in xs]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
                raise _Invalid(f"joins {_short(end)}, which is not an op of the graph", f"graph.edges[{i}]")
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
