"""Data export: saved-analysis JSON against its schema, DOT and GraphML
read back by networkx, hostile files refused, and ``tfviz export`` on the command line."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import networkx as nx
import pytest

from tests.conftest import EXAMPLES, ROOT
from tfviz import graphformats
from tfviz.analysisfile import (
    SCHEMA_VERSION,
    AnalysisFileError,
    analysis_document,
    analysis_json,
    load_analysis,
    parse_analysis,
)
from tfviz.cli import refuse_graph_path
from tfviz.errors import AnalysisError
from tfviz.report import Report

jsonschema = pytest.importorskip("jsonschema")
SCHEMA = json.loads((ROOT / "tfviz" / "schemas" / "tfviz-analysis.schema.json").read_text())


@pytest.fixture(scope="module")
def stop_gradient(analyze_example) -> Report:
    return analyze_example("kind_stop_gradient.py")


def test_schema_is_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["schema_version"]["const"] == SCHEMA_VERSION


@pytest.mark.parametrize("name", ["kind_stop_gradient.py", "kind_nan.py", "seed3_chain_rule.py"])
def test_real_exports_match_the_schema_and_round_trip(analyze_example, name):
    report = analyze_example(name)
    doc = analysis_document(report)
    jsonschema.validate(doc, SCHEMA)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["graph"]["ops"]
    assert json.loads(json.dumps(doc)) == doc  # plain JSON data already: what is saved is what is read
    # JSON → Report → JSON is the identity (a non-finite norm is already null in JSON).
    back = parse_analysis(analysis_json(report))
    assert back == Report.from_dict(json.loads(report.to_json()))
    assert analysis_document(back) == doc
    assert [(p.kind, p.op) for p in back.problems] == [(p.kind, p.op) for p in report.problems]


@pytest.mark.parametrize("name", ["kind_stop_gradient.py", "kind_nan.py", "seed3_chain_rule.py"])
def test_the_document_written_from_the_workers_data_is_the_reports_own(analyze_example, name):
    # ``check --graph`` writes the worker's plain data as it came, not turned into the
    # report's dataclasses and back; what it writes must be what the report would write.
    from tfviz.analysisfile import analysis_json_of

    report = analyze_example(name)
    sent = json.loads(json.dumps(report.to_dict(full_graph=True), allow_nan=True))  # as the worker sends it
    text = analysis_json_of(sent)
    expected = analysis_json(Report.from_dict(sent))
    assert text == expected  # an infinite norm among them (kind_nan.py): null, both ways
    if name == "kind_nan.py":
        assert "Infinity" in json.dumps(sent, allow_nan=True)

        def refuse(constant: str) -> None:
            raise AssertionError(f"{constant} in strict JSON")

        json.loads(text, parse_constant=refuse)


def same_graphml(g: nx.MultiDiGraph) -> None:
    """The fast GraphML writer and networkx's own read back to the same graph: nodes, edges
    (their keys too) and every value, with its type."""
    fast, slow = (
        nx.parse_graphml(w(g), force_multigraph=True)
        for w in (graphformats.graphml_text, graphformats.graphml_by_networkx)
    )
    assert fast.graph == slow.graph
    read = {k: v for k, v in fast.graph.items() if not k.endswith("_default")}
    assert read == {k: _as_xml_reads(v) for k, v in g.graph.items()}
    assert list(fast.nodes(data=True)) == list(slow.nodes(data=True))
    assert list(fast.edges(keys=True, data=True)) == list(slow.edges(keys=True, data=True))
    assert fast.number_of_nodes() == g.number_of_nodes() and fast.number_of_edges() == g.number_of_edges()


def _as_xml_reads(v):
    """An XML reader turns a carriage return in text into a line feed (both writers alike)."""
    return v.replace("\r\n", "\n").replace("\r", "\n") if isinstance(v, str) else v


@pytest.mark.parametrize("name", ["kind_stop_gradient.py", "kind_nan.py", "seed3_chain_rule.py"])
def test_graphml_writer_is_networkxs_twin(analyze_example, name):
    same_graphml(graphformats.to_networkx(analyze_example(name)))


def test_graphml_writer_is_networkxs_twin_on_a_model_shaped_graph():
    from tests.bigdoc import deep_document

    same_graphml(graphformats.to_networkx(Report.from_dict(deep_document(30, 12))))


def test_dot_and_graphml_read_back_with_status_kind_and_norm(stop_gradient, tmp_path):
    r = stop_gradient
    graphformats.write(r, str(tmp_path / "g.graphml"))
    g = nx.read_graphml(tmp_path / "g.graphml", force_multigraph=True)
    assert set(g.nodes) == {op.id for op in r.graph.ops}
    assert g.number_of_edges() == len(r.graph.edges)
    for op in r.graph.ops:
        assert g.nodes[op.id]["status"] == op.status
        assert g.nodes[op.id].get("kind", "") == graphformats.kind_of(op.status)
        if op.grad_norm is not None:
            assert g.nodes[op.id]["grad_norm"] == pytest.approx(op.grad_norm)
    cut = [(u, v, d) for u, v, d in g.edges(data=True) if d["status"] == "stop_gradient"]
    assert cut and all(d["kind"] == "stop_gradient" for _, _, d in cut)
    assert g.graph["target"] == "loss"

    graphformats.write(r, str(tmp_path / "g.dot"))
    pytest.importorskip("pydot")
    d = nx.nx_pydot.read_dot(tmp_path / "g.dot")
    unq = lambda s: s.strip('"')
    assert {unq(n) for n in d.nodes} == {op.id for op in r.graph.ops}
    assert d.number_of_edges() == len(r.graph.edges)
    status = {unq(n): unq(a["status"]) for n, a in d.nodes(data=True)}
    assert status == {op.id: op.status for op in r.graph.ops}
    if shutil.which("dot"):
        res = subprocess.run(
            ["dot", "-Tsvg", str(tmp_path / "g.dot")], capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 0 and "<svg" in res.stdout, res.stderr


def test_dot_quotes_hostile_names():
    from tfviz.report import GraphEdge, GraphOp

    r = Report(script="s", target='a "quoted"\nname\\')
    r.graph.ops = [
        GraphOp(id='x" -> "y', name="n", type="T", scope=""),
        GraphOp(id="var:w{1}", name="w", type="Variable", scope=""),
    ]
    r.graph.edges = [GraphEdge('x" -> "y', "var:w{1}", 0, 0, "float32", None)]
    pytest.importorskip("pydot")
    g = nx.nx_pydot.from_pydot(
        __import__("pydot").graph_from_dot_data(graphformats.dot_text(graphformats.to_networkx(r)))[0]
    )
    assert g.number_of_nodes() == 2 and g.number_of_edges() == 1


def test_format_of():
    assert [graphformats.format_of(p) for p in ("a.json", "b.DOT", "c.graphml", "d.png")] == [
        "json",
        "dot",
        "graphml",
        "png",
    ]
    with pytest.raises(ValueError, match="cannot tell the format"):
        graphformats.format_of("a.txt")


def _doc(**over) -> dict:
    base = json.loads(analysis_json(Report(script="s.py", target="loss")))
    base["graph"] = {
        "ops": [
            {"id": "a", "name": "a", "type": "T", "scope": ""},
            {"id": "b", "name": "b", "type": "T", "scope": ""},
        ],
        "edges": [
            {"src": "a", "dst": "b", "src_output": 0, "dst_input": 0, "dtype": "float32", "shape": [2]}
        ],
        "functions": [],
    }
    base.update(over)
    return base


def _with(path: str, value) -> bytes:
    doc = _doc()
    *head, last = path.split(".")
    node = doc
    for k in head:
        node = node[int(k)] if k.isdigit() else node[k]
    node[int(last) if last.isdigit() else last] = value
    return json.dumps(doc).encode()


HOSTILE = {
    "not json": (b"print('hello')", "not valid JSON"),
    "truncated": (json.dumps(_doc()).encode()[:-40], "not valid JSON"),
    "binary": (bytes(range(256)), "not text"),
    "NaN token": (json.dumps(_doc()).replace('"ok": false', '"ok": NaN').encode(), "not valid JSON"),
    "deeply nested": (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
    "deep inside": (_with("targets", json.loads("[" * 50 + "]" * 50)), "should be a string"),
    "a list": (b"[1, 2, 3]", "not a tfviz analysis"),
    "other JSON": (b'{"name": "package.json"}', "not a tfviz analysis"),
    "newer schema": (json.dumps(_doc(schema_version=99)).encode(), "newer tfviz"),
    "schema as text": (json.dumps(_doc(schema_version="1")).encode(), "schema_version"),
    "counts only": (
        json.dumps(_doc(graph={"ops": 3, "edges": 2, "functions": 0})).encode(),
        "counts, not the graph",
    ),
    "huge integer": (
        json.dumps(_doc()).replace('"src_output": 0', '"src_output": ' + "9" * 5000).encode(),
        "not valid JSON",
    ),
    "big integer": (_with("graph.edges.0.src_output", 10**30), "whole number"),
    "huge float": (
        json.dumps(_doc()).replace('"timings_s": {}', '"timings_s": {"x": 1e999}').encode(),
        "finite number",
    ),
    "line number": (
        _with(
            "problems",
            [
                {
                    "kind": "nan",
                    "severity": "error",
                    "op": "",
                    "op_type": "",
                    "message": "",
                    "source": {"file": "f", "line": 2**40},
                }
            ],
        ),
        "not a line number",
    ),
    "ops not a list": (_with("graph.ops", "everything"), "not a valid"),
    "op as a number": (_with("graph.ops.0", 7), "graph.ops[0] should be an object"),
    "missing field": (_with("graph.ops.0", {"id": "a"}), "lacks 'name'"),
    "bool as int": (_with("graph.edges.0.src_output", True), "whole number"),
    "unknown status": (_with("graph.ops.0.status", "exploded"), "not one of tfviz's values"),
    "unknown kind": (
        _with(
            "variables",
            [
                {
                    "name": "w",
                    "tf_name": "w",
                    "dtype": "f",
                    "shape": [],
                    "status": "broken",
                    "kind": "__import__('os')",
                }
            ],
        ),
        "not one of tfviz's values",
    ),
    "dangling edge": (_with("graph.edges.0.dst", "nowhere"), "not an op of the graph"),
    "duplicate op": (_with("graph.ops.1.id", "a"), "appears twice"),
    "unknown group": (_with("graph.ops.0.group", "ghost"), "not a function of the graph"),
    "pickle": (b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94.", "not"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_or_malformed_files_are_refused_clearly(name, tmp_path):
    data, words = HOSTILE[name]
    path = tmp_path / "a.json"
    path.write_bytes(data)
    with pytest.raises(AnalysisFileError, match=re.escape(words)) as info:
        load_analysis(path)
    assert str(path) in str(info.value) and len(str(info.value)) < 400


def test_valid_minimal_document_loads_and_unknown_fields_are_ignored(tmp_path):
    doc = _doc(future_field={"x": 1})
    doc["graph"]["ops"][0]["future"] = 1
    path = tmp_path / "a.json"
    path.write_text(json.dumps(doc))
    r = load_analysis(path)
    assert [op.id for op in r.graph.ops] == ["a", "b"]
    del doc["schema_version"]  # written by check --graph before schema_version existed
    assert parse_analysis(json.dumps(doc)) == r


def test_oversized_file_and_special_files_are_refused(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(analysis_json(Report(script="s", target="t")) + " " * 2048)
    with pytest.raises(AnalysisFileError, match="larger than"):
        load_analysis(path, max_bytes=1024)
    with pytest.raises(AnalysisFileError, match="cannot read"):
        load_analysis(tmp_path / "missing.json")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.json")
        with pytest.raises(AnalysisFileError, match="not a regular file"):
            load_analysis(tmp_path / "fifo.json")  # would block forever if opened


# -- the command line ----------------------------------------------------------------


def tfviz(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tfviz.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_export_json_and_dot_end_to_end(tmp_path):
    script = str(EXAMPLES / "kind_stop_gradient.py")
    r = tfviz("export", script, "-o", str(tmp_path / "a.json"))
    assert r.returncode == 1, r.stderr  # problems found, as check
    doc = json.loads((tmp_path / "a.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    assert [p["kind"] for p in doc["problems"]] == ["stop_gradient"]
    r = tfviz("export", str(EXAMPLES / "seed3_chain_rule.py"), "-o", str(tmp_path / "b.graphml"))
    assert r.returncode == 0, r.stderr
    assert "b.graphml" in r.stdout and nx.read_graphml(tmp_path / "b.graphml").number_of_nodes() > 3


def test_export_refusals_exit_2_before_running(tmp_path):
    script = str(EXAMPLES / "kind_stop_gradient.py")
    mine = tmp_path / "notes.dot"
    mine.write_text("my own notes\n")
    r = tfviz("export", script, "-o", str(mine))
    assert r.returncode == 2 and "not a file tfviz wrote" in r.stderr and "--force" in r.stderr
    assert mine.read_text() == "my own notes\n"
    r = tfviz("export", script, "-o", script, "--format", "json", "--force")
    assert r.returncode == 2 and "script being analyzed" in r.stderr
    r = tfviz("export", script, "-o", str(tmp_path / "g.png"), "--scale", "-1")
    assert r.returncode == 2 and "--scale: must be a positive number" in r.stderr
    assert not (tmp_path / "g.png").exists()
    r = tfviz("export", script, "-o", str(tmp_path / "g.txt"))
    assert r.returncode == 2 and "cannot tell the format" in r.stderr
    r = tfviz("export", str(tmp_path / "missing.py"), "-o", str(tmp_path / "g.json"))
    assert r.returncode == 2 and not (tmp_path / "g.json").exists()


def test_files_tfviz_wrote_may_be_replaced(tmp_path):
    r = Report(script="s", target="t")
    for ext in ("json", "dot", "graphml"):
        path = tmp_path / f"g.{ext}"
        graphformats.write(r, str(path))
        refuse_graph_path(str(path), "s.py", force=False, flag="-o")  # no error: ours
    foreign = tmp_path / "x.graphml"
    foreign.write_text("<graphml/>")
    with pytest.raises(AnalysisError, match="not a file tfviz wrote"):
        refuse_graph_path(str(foreign), "s.py", force=False, flag="-o")
    refuse_graph_path(str(foreign), "s.py", force=True, flag="-o")


def test_dot_and_graphml_name_nodes_as_the_window_does_and_give_their_layer(analyze_example, tmp_path):
    """The label is the window's display name, the TensorFlow name stays as ``op_name``, and
    each op sits in the Keras layer whose weights it reads (the layer TensorFlow's own variable
    names put them in: ``encoder/enc_1/kernel`` is in ``enc_1``)."""
    from tfviz.structure.hierarchy import Hierarchy, layer_names, variable_owners

    r = analyze_example("kind_stop_gradient_layer.py")
    graphformats.write(r, str(tmp_path / "g.graphml"))
    g = nx.read_graphml(tmp_path / "g.graphml", force_multigraph=True)
    every = [*r.variables, *r.read_not_trained]
    h = Hierarchy(r.graph, layer_names(every), variable_owners(every))
    for op in r.graph.ops:
        assert g.nodes[op.id]["label"] == h.display_name(op.id) and g.nodes[op.id]["op_name"] == op.name
    for v in r.variables:
        node = g.nodes[f"var:{v.name}"]
        assert node["label"] == v.name and node["layer"] == v.tf_name.split(":")[0].split("/")[-2], (v, node)
    reads = [n for n, d in g.nodes(data=True) if d["type"] == "MatMul" and d.get("layer") == "enc_1"]
    assert reads, "the first Dense layer's matmul is in its layer"
