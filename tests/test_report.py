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
