"""A saved analysis: the JSON document ``tfviz export -o x.json`` and ``check --graph`` write.

The document is :meth:`Report.to_dict` (full graph) with a ``schema_version`` in front;
``docs/schema/tfviz-analysis.schema.json`` describes it. Reading one back never runs code
and never unpickles: the file is parsed as strict JSON (size-capped), every field is
checked against the report's own dataclasses (types, bounds, vocabularies, references
between ops and edges), and only then rebuilt as a :class:`Report`. Anything else is an
:class:`AnalysisFileError` with one clear sentence.

>>> from tfviz.report import Report
>>> r = Report(script="s.py", target="loss", ok=True)
>>> parse_analysis(analysis_json(r)) == r
True
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import types
import typing
from typing import Any

from tfviz.report import (
    EDGE_OFF_PATH,
    EDGE_PASSES,
    EDGE_STARVED,
    KINDS,
    STATUSES,
    GraphDoc,
    Report,
)

#: Bumped when a field changes meaning or is removed; adding a field keeps it.
SCHEMA_VERSION = 1
#: The largest file read (a fully expanded ResNet50 export is a few MB).
MAX_BYTES = 256 * 2**20
#: Whole numbers beyond this (ports, lines, dimensions) are not from a real analysis.
MAX_INT = 2**53
#: Longer strings are not from a real analysis (program output is capped far below this).
MAX_STR = 16 * 2**20

OP_STATUSES = frozenset({EDGE_PASSES, EDGE_OFF_PATH, EDGE_STARVED, *KINDS})
_VOCAB: dict[tuple[str, str], frozenset] = {
    ("VariableReport", "status"): frozenset(STATUSES),
    ("VariableReport", "kind"): frozenset({None, *KINDS}),
    ("Problem", "kind"): frozenset(KINDS),
    ("Problem", "severity"): frozenset({"error", "warning"}),
    ("GraphOp", "status"): OP_STATUSES,
    ("GraphEdge", "status"): OP_STATUSES,
    ("Report", "mode"): frozenset({"target", "program"}),
}


class AnalysisFileError(ValueError):
    """The file is not a saved tfviz analysis this version can show."""


def analysis_document(report: Report) -> dict[str, Any]:
    """The saved-analysis document: ``schema_version``, then the report with its full graph."""
    return {"schema_version": SCHEMA_VERSION, **json.loads(report.to_json(full_graph=True))}


def analysis_json(report: Report, indent: int | None = None) -> str:
    return json.dumps(analysis_document(report), indent=indent, allow_nan=False)


def load_analysis(path: str | os.PathLike, max_bytes: int = MAX_BYTES) -> Report:
    """Read a saved analysis from ``path``; raises :class:`AnalysisFileError`."""
    if os.path.exists(path) and not os.path.isfile(path):  # a FIFO or a device blocks or never ends
        raise AnalysisFileError(f"{path} is not a regular file")
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise AnalysisFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise AnalysisFileError(f"{path} is larger than {max_bytes // 2**20} MB;"
                                " it is not a tfviz analysis this version can open")
    return parse_analysis(data, name=str(path))


def parse_analysis(data: str | bytes, name: str = "the file") -> Report:
    """Check and rebuild a saved analysis from its text; raises :class:`AnalysisFileError`."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        doc = json.loads(text, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise AnalysisFileError(f"{name} is not text (not UTF-8): not a tfviz analysis") from None
    except RecursionError:
        raise AnalysisFileError(f"{name} is nested too deeply to be a tfviz analysis") from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, an integer of thousands of digits
        raise AnalysisFileError(f"{name} is not valid JSON: {exc}") from None
    return report_from_document(doc, name)


def report_from_document(doc: Any, name: str = "the file") -> Report:
    if not isinstance(doc, dict) or not ("schema_version" in doc or "tfviz" in doc):
        raise AnalysisFileError(f"{name} is JSON but not a tfviz analysis (no schema_version)")
    version = doc.get("schema_version", SCHEMA_VERSION)  # check --graph before versioning: same shape
    if type(version) is not int or version < 1:
        raise AnalysisFileError(f"{name}: schema_version must be a whole number, got {version!r}")
    if version > SCHEMA_VERSION:
        raise AnalysisFileError(f"{name} was written by a newer tfviz (schema {version}); this"
                                f" tfviz reads schema {SCHEMA_VERSION}: upgrade tfviz to open it")
    graph = doc.get("graph")
    if isinstance(graph, dict) and type(graph.get("ops")) is int:
        raise AnalysisFileError(f"{name} holds the graph's counts, not the graph (tfviz check --json"
                                " output): save it with tfviz export -o FILE.json or check --graph")
    try:
        clean = _check(doc, Report, "")
        report = Report.from_dict(clean)
        _check_references(report.graph)
    except _Invalid as exc:
        raise AnalysisFileError(f"{name} is not a valid tfviz analysis: {exc}") from None
    return report


class _Invalid(Exception):
    pass


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not allowed (norms that are not finite are written as null)")


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _check(value: Any, hint: Any, where: str) -> Any:
    """``value`` checked against the type ``hint``; dataclasses come back as dicts of
    their known fields (unknown keys, from a newer minor version, are dropped)."""
    at = where or "the document"
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise _Invalid(f"{at} should be an object")
        out = {}
        hints = _hints(hint)
        for f in dataclasses.fields(hint):
            if f.name not in value:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise _Invalid(f"{at} lacks {f.name!r}")
                continue
            sub = f"{where}.{f.name}" if where else f.name
            out[f.name] = _check(value[f.name], hints[f.name], sub)
            if (hint.__name__, f.name) == ("Source", "line") and not 0 <= out[f.name] < 2**31:
                raise _Invalid(f"{sub} is not a line number")
            allowed = _VOCAB.get((hint.__name__, f.name))
            if allowed is not None and out[f.name] not in allowed:
                raise _Invalid(f"{sub} is {out[f.name]!r}, not one of tfviz's values")
        return out
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _check(value, inner, where)
    if origin is list:
        if not isinstance(value, list):
            raise _Invalid(f"{at} should be a list")
        return [_check(v, args[0], f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _Invalid(f"{at} should be an object")
        return {_check(k, args[0], f"{where} key"): _check(v, args[1], f"{where}.{k}")
                for k, v in value.items()}
    return _scalar(value, hint, at)


def _scalar(value: Any, hint: Any, at: str) -> Any:
    if hint is str:
        if not isinstance(value, str):
            raise _Invalid(f"{at} should be a string")
        if len(value) > MAX_STR:
            raise _Invalid(f"{at} is a string of {len(value)} characters")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise _Invalid(f"{at} should be true or false")
        return value
    if hint is int:
        if type(value) is not int or abs(value) > MAX_INT:
            raise _Invalid(f"{at} should be a whole number of at most {MAX_INT}")
        return value
    if hint is float:
        if type(value) not in (int, float) or not math.isfinite(value):
            raise _Invalid(f"{at} should be a finite number")
        return float(value)
    raise _Invalid(f"{at}: unexpected field type {hint!r}")  # pragma: no cover - a new dataclass field


def _check_references(g: GraphDoc) -> None:
    """Edges join ops that exist, and op ids are unique: the view indexes by them."""
    ids: set[str] = set()
    for op in g.ops:
        if op.id in ids:
            raise _Invalid(f"op id {op.id!r} appears twice")
        ids.add(op.id)
    for i, e in enumerate(g.edges):
        for end in (e.src, e.dst):
            if end not in ids:
                raise _Invalid(f"graph.edges[{i}] joins {end!r}, which is not an op of the graph")
    fn_ids = {f.id for f in g.functions}
    for op in g.ops:
        if op.group and op.group not in fn_ids:
            raise _Invalid(f"op {op.id!r} is in group {op.group!r}, which is not a function of the graph")
