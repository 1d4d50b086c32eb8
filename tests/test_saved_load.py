"""Reading a saved analysis at scale, and never blocking on a path: type hints resolved
once per class, not per object; documented limits refused with a clear message; progress
and cancelling; the element-wise JSON parser agrees with ``json.loads``; special files are
never read."""

from __future__ import annotations

import json
import os
import threading
import typing

import pytest

from tests.bigdoc import a_problem, big_document, big_json
from tfviz import analysisfile
from tfviz.analysisfile import (
    MAX_NESTING,
    MAX_OPS,
    MAX_VARIABLES,
    AnalysisFileError,
    LoadCancelled,
    load_analysis,
    parse_analysis,
    report_from_document,
)
from tfviz.report import Report
from tfviz.safefile import NotReadable, read_regular


def test_a_large_document_resolves_type_hints_once_per_class_not_per_object(monkeypatch):
    """50,000 variables (and 4,000 ops, 2,000 edges): the old checker called
    typing.get_type_hints for every object, about 1 ms each; now once per dataclass."""
    monkeypatch.setattr(analysisfile, "_BUILDERS", {})
    calls: list[type] = []
    real = typing.get_type_hints

    def counting(obj, *args, **kwargs):
        calls.append(obj)
        return real(obj, *args, **kwargs)

    monkeypatch.setattr(typing, "get_type_hints", counting)
    report = parse_analysis(big_json(50_000, graph_every=25))
    assert len(report.variables) == 50_000 and len(report.graph.ops) == 4_001
    assert report.variables[49_999].name == "layer_49999/kernel"
    assert report.variables[7].source.line == 19 and report.graph.edges[0].status == "passes"
    assert 0 < len(calls) <= 12 and len(calls) == len(set(calls)), calls  # one per dataclass


def test_the_rebuilt_report_is_the_one_report_from_dict_builds():
    doc = big_document(300, graph_every=3)
    doc["problems"] = [a_problem()]
    doc["graph"]["functions"] = [
        {
            "id": "fn",
            "name": "body",
            "kind": "while",
            "parent": "",
            "call_op": "loss",
            "source": None,
            "call_type": "While",
        }
    ]
    doc["graph"]["ops"][1]["group"] = "fn"
    doc["read_not_trained"] = [{"name": "t", "reason": "target network"}]
    expected = Report.from_dict(json.loads(json.dumps(doc)))
    assert report_from_document(json.loads(json.dumps(doc))) == expected
    assert parse_analysis(json.dumps(doc)) == expected


def test_progress_rises_to_one_and_cancelling_stops_the_load(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(big_json(20_000, graph_every=10))
    seen: list[tuple[float, str]] = []
    load_analysis(path, progress=lambda f, stage: seen.append((f, stage)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(seen) > 10
    assert {"reading the file", "parsing the JSON", "checking the analysis"} <= {s for _, s in seen}

    stop = threading.Event()

    def progress(fraction: float, stage: str) -> None:
        if stage == "checking the analysis" and fraction > 0.6:
            stop.set()

    with pytest.raises(LoadCancelled):
        load_analysis(path, progress=progress, cancelled=stop.is_set)
    with pytest.raises(LoadCancelled):  # while the JSON is being parsed, too
        load_analysis(
            path, progress=lambda f, s: stop.set() if s == "parsing the JSON" else None, cancelled=stop.is_set
        )


def test_documents_past_the_limits_are_refused_before_being_checked():
    variable = {"name": "w", "tf_name": "w", "dtype": "float32", "shape": [], "status": "connected"}
    doc = {
        "schema_version": 1,
        "script": "s.py",
        "target": "loss",
        "variables": [variable] * (MAX_VARIABLES + 1),
    }  # one dict, many times: cheap to build
    with pytest.raises(
        AnalysisFileError,
        match=f"lists 1,000,001 variables; tfviz opens analyses of at most {MAX_VARIABLES:,} variables",
    ):
        report_from_document(doc, "big.json")
    op = {"id": "a", "name": "a", "type": "T", "scope": ""}
    doc = {
        "schema_version": 1,
        "script": "s.py",
        "target": "loss",
        "graph": {"ops": [op] * (MAX_OPS + 1), "edges": [], "functions": []},
    }
    with pytest.raises(
        AnalysisFileError,
        match=f"graph of {MAX_OPS + 1:,} ops; tfviz opens graphs of at most {MAX_OPS:,} ops",
    ):
        report_from_document(doc, "big.json")


def _nested(n_functions: int, scope_levels: int, loop: bool = False) -> dict:
    """A graph whose one op sits ``n_functions`` function bodies and ``scope_levels`` name
    scopes deep (each function called from the body above it, at the top of its scope)."""
    fns, ops = [], []
    parent = ""
    for i in range(n_functions):
        call = f"{parent + '/' if parent else ''}call{i}"
        ops.append({"id": call, "name": f"call{i}", "type": "PartitionedCall", "scope": "", "group": parent})
        fns.append(
            {"id": f"{call}#body", "name": f"f{i}", "kind": "function", "parent": parent, "call_op": call}
        )
        parent = f"{call}#body"
    if loop and fns:
        fns[0]["parent"] = parent  # the outermost body inside the innermost: a loop
    scope = "/".join(f"s{i}" for i in range(scope_levels))
    ops.append({"id": "deep", "name": "deep", "type": "Relu", "scope": scope, "group": parent})
    return {
        "schema_version": 1,
        "script": "s.py",
        "target": "loss",
        "graph": {"ops": ops, "edges": [], "functions": fns},
    }


def test_nesting_past_the_limit_and_loops_of_function_bodies_are_refused():
    report_from_document(_nested(0, MAX_NESTING))  # exactly at the limit: fine
    report_from_document(_nested(MAX_NESTING // 2, MAX_NESTING // 2))
    for doc, words in (
        (_nested(0, MAX_NESTING + 1), "op 'deep' is nested more than 64 deep"),
        (_nested(MAX_NESTING + 1, 0), "is nested more than 64 deep"),
        (_nested(40, 40), "op 'deep' is nested more than 64 deep"),
        (_nested(3, 0, loop=True), "loop of parents"),
    ):
        with pytest.raises(AnalysisFileError, match=words) as info:
            report_from_document(doc, "deep.json")
        assert str(info.value).startswith("deep.json is not a valid tfviz analysis: ")


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, {"b": [2]}], "c": {"d": {"e": [1, 2]}}}',
        " [ 1 , 2 ] ",
        "[]",
        "{}",
        "1",
        '"x"',
        '{"a": 1, "a": 2}',
        "[1,]",
        "[,1]",
        '{"a": 1,}',
        '{"a" 1}',
        "[1 2]",
        "",
        " ",
        "[1] x",
        '{"a": [NaN]}',
        '{"a": NaN}',
        "[1e999]",
        '{"a": {"b": {"c": {"d": [[[]]]}}}}',
        '{"a"',
        "[",
        '{"variables": [{"x": 1}, {"x": 2}], "graph": {"ops": [{"id": "a"}]}}',
    ],
)
def test_the_element_wise_parser_agrees_with_json_loads(text):
    run = analysisfile._Run(None, None)
    try:
        expected = json.loads(text, parse_constant=analysisfile._no_constant)
    except ValueError:
        with pytest.raises(ValueError):
            analysisfile._loads(text, run)
        return
    assert analysisfile._loads(text, run) == expected


def test_special_files_are_never_read(tmp_path):
    """A FIFO would block the reader forever, /dev/zero never ends, /proc/kmsg looks like a
    regular file and blocks until the kernel logs something."""
    (tmp_path / "ok.py").write_text("x = 1\n")
    assert read_regular(tmp_path / "ok.py", 100) == b"x = 1\n"
    with pytest.raises(NotReadable, match="larger than"):
        read_regular(tmp_path / "ok.py", 3)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.py")
        with pytest.raises(NotReadable, match="not a regular file"):
            read_regular(tmp_path / "fifo.py", 100)
    for special in ("/dev/zero", "/proc/kmsg", "/proc/self/status"):
        with pytest.raises(NotReadable, match="kernel or device file"):
            read_regular(special, 100)
    (tmp_path / "kmsg.py").symlink_to("/proc/kmsg")  # a link does not hide where it leads
    with pytest.raises(NotReadable, match="kernel or device file"):
        read_regular(tmp_path / "kmsg.py", 100)
