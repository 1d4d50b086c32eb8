"""A saved analysis is validated by its shipped JSON Schema, compiled (fastjsonschema).

The schema is now the only check of types, bounds and vocabularies, so these tests hold it
to the report's dataclasses (every field described, with its JSON type), to tfviz's own
vocabularies, and the compiled validator to an independent implementation of JSON Schema
2020-12 (jsonschema, its slow twin): on the hostile files and on random damage to a real
document, both accept or refuse alike, and the place tfviz names is one jsonschema names.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import types
import typing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.bigdoc import a_problem, big_document
from tfviz import analysisfile, schemas
from tfviz.analysisfile import SCHEMA_AT, AnalysisFileError, reading_schema
from tfviz.program.watch import CONDITIONS
from tfviz.vocabulary import Flow, Kind, Severity, Status

jsonschema = pytest.importorskip("jsonschema")
PUBLISHED = schemas.load("analysis")
READING = reading_schema()
TWIN = jsonschema.Draft202012Validator(READING)


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = analysisfile._at(schema, node["$ref"][1:])
    return node


def _json_types(schema: dict[str, Any], node: dict[str, Any]) -> set[str]:
    """The JSON types a property's schema admits (an enum's from its values)."""
    node = _resolve(schema, node)
    if "anyOf" in node:
        return set().union(*(_json_types(schema, b) for b in node["anyOf"]))
    if "enum" in node:
        return {"null" if v is None else "string" for v in node["enum"]}
    t = node["type"]
    return {t} if isinstance(t, str) else set(t)


def _hint_types(hint: Any) -> set[str]:
    """The JSON types a dataclass field's type hint is written as."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_hint_types(a) for a in args))
    if hint is type(None):
        return {"null"}
    if origin is list:
        return {"array"}
    if origin is dict or dataclasses.is_dataclass(hint):
        return {"object"}
    return {str: {"string"}, bool: {"boolean"}, int: {"integer"}, float: {"number"}}[hint]


@pytest.mark.parametrize("cls", list(SCHEMA_AT), ids=lambda c: c.__name__)
def test_the_schema_describes_every_field_of_each_dataclass_with_its_type(cls):
    node = _resolve(PUBLISHED, analysisfile._at(PUBLISHED, SCHEMA_AT[cls]))
    props = node["properties"]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    assert set(props) - {"schema_version"} == set(fields)  # nothing unchecked reaches the report
    hints = typing.get_type_hints(cls)
    for name in fields:
        assert _json_types(PUBLISHED, props[name]) == _hint_types(hints[name]), (cls.__name__, name)
    needed = {n for n, f in fields.items() if analysisfile._required(f)}
    assert needed <= set(node.get("required", ()))  # what is written holds at least what is read
    assert set(_resolve(READING, analysisfile._at(READING, SCHEMA_AT[cls])).get("required", ())) == needed


def test_the_schemas_vocabularies_are_tfvizs_own():
    defs = PUBLISHED["$defs"]
    assert defs["kind"]["enum"] == [str(k) for k in Kind]
    assert defs["status"]["enum"] == [str(s) for s in Status]
    assert set(defs["op_status"]["enum"]) == {str(w) for w in (*Flow, *Kind)}
    assert defs["problem"]["properties"]["severity"]["enum"] == [str(s) for s in Severity]
    magnitude = defs["variable"]["properties"]["magnitude"]["enum"]
    assert set(magnitude) == {None, "vanishing", "exploding", "cancelled"}
    watch = PUBLISHED["properties"]["watch"]["properties"]
    assert watch["until"]["items"]["enum"] == list(CONDITIONS)
    assert watch["fired"]["enum"] == [*CONDITIONS, None]


def _where(error: Any) -> str:
    out = ""
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _compare(doc: dict[str, Any]) -> None:
    """The compiled validator and jsonschema agree on ``doc``; where it is refused, tfviz
    names a place jsonschema names (fastjsonschema stops at the first error it meets)."""
    places = {_where(e) for e in TWIN.iter_errors(doc)}
    try:
        analysisfile._check(copy.deepcopy(doc), analysisfile._Run(None, None))
    except analysisfile._Invalid as exc:
        assert places, f"refused, but jsonschema accepts it: {exc}"
        assert exc.where in places, (str(exc), places)
    else:
        assert not places, f"accepted, but jsonschema refuses it at {places}"


def _base() -> dict[str, Any]:
    doc = big_document(3, graph_every=1)
    doc["problems"] = [a_problem(cell=1, cell_line=2, cell_name="c")]
    doc["read_not_trained"] = [{"name": "t", "reason": "target network", "tf_name": "t"}]
    doc["graph"]["functions"] = [
        {"id": "fn", "name": "body", "kind": "while", "parent": "", "call_op": "loss", "call_type": "While"}
    ]
    doc["graph"]["layer_attributes"] = {"dense": {"class": "Dense", "units": "4"}}
    doc["timings_s"] = {"trace": 0.5}
    doc["watch"] = {
        "until": ["nan"],
        "steps": 3,
        "fired": "nan",
        "step": 3,
        "fired_on": ["worker 1 of 2"],
        "min_norm": 0.1,
        "layers": [{"name": "dense", "first": 1.0, "last": None}],
    }
    return doc


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at] if at else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*at, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*at, i))
    return out


BASE = _base()
PATHS = _paths(BASE)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False)  # the parser makes no NaN; 1e999 parses as infinity
    | st.text(max_size=8)
    | st.sampled_from(["passes", "nan", "connected", "error", "program", "", "-1"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def test_the_base_document_is_valid_and_reaches_every_object():
    _compare(BASE)
    keys = {p[-1] for p in PATHS if isinstance(p[-1], str)}
    assert {"cell_line", "call_type", "fired_on", "first", "layer_attributes", "tf_name"} <= keys


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), st.one_of(_json, st.just(dataclasses.MISSING)))
def test_the_compiled_validator_agrees_with_jsonschema_on_damaged_documents(path, value):
    doc = copy.deepcopy(BASE)
    node = doc
    for part in path[:-1]:
        node = node[part]
    if value is dataclasses.MISSING:
        if isinstance(node, dict):
            del node[path[-1]]
        else:
            node.pop(path[-1])
    else:
        node[path[-1]] = value
    _compare(doc)


def test_the_compiled_validator_agrees_with_jsonschema_on_the_hostile_files():
    from tests.test_export import HOSTILE

    compared = 0
    for data, _words in HOSTILE.values():
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue
        if isinstance(doc, dict) and "schema_version" in doc and doc["schema_version"] == 1:
            if isinstance(doc.get("graph"), dict) and type(doc["graph"].get("ops")) is int:
                continue  # refused before the schema: the counts of check --json
            _compare(doc)
            compared += 1
    assert compared >= 14


def test_a_document_without_what_a_reader_can_default_opens_and_the_published_schema_refuses_it():
    doc = {"schema_version": 1, "script": "s.py", "target": "loss"}  # before ok and the rest were written
    assert analysisfile.report_from_document(doc).ok is False
    assert not jsonschema.Draft202012Validator(PUBLISHED).is_valid(doc)
    with pytest.raises(AnalysisFileError, match="the document lacks 'target'"):
        analysisfile.report_from_document({"schema_version": 1, "script": "s.py"})


def test_numbers_are_made_the_fields_type():
    doc = _base()
    doc["variables"][0]["grad_norm"] = 2  # JSON's 2 for a norm
    doc["variables"][0]["shape"] = [4.0, None]  # and 4.0 for a dimension: an integer to JSON Schema
    doc["graph"]["edges"][0]["src_output"] = 1.0
    r = analysisfile.report_from_document(doc)
    assert type(r.variables[0].grad_norm) is float and r.variables[0].grad_norm == 2.0
    assert r.variables[0].shape == [4, None] and type(r.variables[0].shape[0]) is int
    assert type(r.graph.edges[0].src_output) is int
