"""Reports round-trip through JSON unchanged (they cross a process boundary)."""

from __future__ import annotations

import json

from tfviz.report import Report


def test_real_report_round_trips(analyze_example):
    report = analyze_example("healthy_control_flow.py")
    again = Report.from_dict(json.loads(report.to_json()))
    assert again == report
    assert again.graph.functions and again.graph.ops[0].outputs


def test_compact_json_has_graph_counts(analyze_example):
    report = analyze_example("kind_integer.py")
    doc = json.loads(report.to_json(full_graph=False))
    assert doc["graph"] == report.graph.counts()


def test_plain_data_is_what_dataclasses_asdict_gives(analyze_example):
    import dataclasses
    import gc

    from tests.bigdoc import big_document
    from tfviz.analysisfile import parse_analysis

    reports = [
        analyze_example("healthy_control_flow.py"),
        analyze_example("kind_nan.py"),
        parse_analysis(json.dumps(big_document(500))),
    ]
    for report in reports:
        assert report.to_dict() == dataclasses.asdict(report)
        assert list(report.to_dict()) == list(dataclasses.asdict(report))  # the keys' order too
    # the collector, paused while the tree is built, is as it was after
    assert gc.isenabled()
    gc.disable()
    try:
        reports[0].to_dict()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_strict_json_says_null_for_a_norm_that_is_not_finite_anywhere(analyze_example):
    import math

    report = analyze_example("kind_nan.py")
    edges = [e.grad_norm for e in report.graph.edges]
    assert math.isinf(report.variables[0].grad_norm) and any(n is not None and math.isinf(n) for n in edges)
    doc = json.loads(report.to_json())  # strict JSON: Infinity would be refused by other readers
    assert doc["variables"][0]["grad_norm"] is None
    assert [e["grad_norm"] for e in doc["graph"]["edges"]] == [
        None if n is None or math.isinf(n) else n for n in edges
    ]


def _json_modules_way(value, indent=None):
    from tfviz.report import plain

    return json.dumps(plain(value, strict=True), indent=indent, allow_nan=False)


def test_strict_json_writes_what_the_json_module_writes_of_plain_data(analyze_example):
    # orjson walks the dataclasses itself; what it writes must parse to what the json module
    # writes of the report made plain data, key order and nulls for NaN included, in ASCII.
    from tests.bigdoc import big_document
    from tfviz.analysisfile import parse_analysis
    from tfviz.report import strict_json

    reports = [
        analyze_example("healthy_control_flow.py"),
        analyze_example("kind_nan.py"),
        analyze_example("seed2_frozen_copy.py"),
        parse_analysis(json.dumps(big_document(200))),
    ]
    reports[0].notes.append("a note in Chinese: 梯度 and an emoji 😀")  # escaped as json escapes them
    try:
        for report in reports:
            for full in (True, False):
                fields = report.fields(full)
                for indent in (None, 2):
                    text = strict_json(fields, indent)
                    expected = _json_modules_way(fields, indent)
                    assert text.isascii()
                    assert json.loads(text) == json.loads(expected)
                    assert list(json.loads(text)) == list(json.loads(expected))
                    if indent == 2:
                        assert text == expected  # the printed --json, byte for byte
        assert "\\u68af\\u5ea6" in strict_json(reports[0].fields()) and "\\ud83d\\ude00" in strict_json(
            reports[0].fields()
        )
    finally:
        reports[0].notes.pop()


def test_strict_json_falls_back_where_orjson_will_not_write():
    from tfviz.report import Source, strict_json

    # a script's undecodable output, kept with surrogate escapes; and an indent orjson lacks
    value = {"stdout": "bytes \udcff here", "source": Source("a.py", 1)}
    assert json.loads(strict_json(value)) == json.loads(_json_modules_way(value))
    assert strict_json({"a": [1]}, indent=4) == json.dumps({"a": [1]}, indent=4)
