"""Graphviz ``dot`` orders small groups that our own ordering leaves crossings in, when it is
installed and does no worse; without it (or when it is slow or fails) ours stays and the view
still draws everything."""

from __future__ import annotations

import shutil

import pytest

from app.graph.layout import dot_order, layered
from app.graph.layout.placement import GraphLayout
from app.graph.view import GraphView
from tfviz.report import GraphDoc, GraphEdge, GraphOp
from tfviz.structure.hierarchy import ROOT, Hierarchy

HAVE_DOT = shutil.which("dot") is not None


def _graph() -> GraphDoc:
    """Two crossing chains plus a long skip edge: x->a->c->t, y->b->c, x->t."""
    names = ["x", "y", "a", "b", "c", "__target__"]
    ops = [GraphOp(n, n, "Target" if n == "__target__" else "Op", "", on_path=True) for n in names]
    pairs = [("x", "b"), ("y", "a"), ("a", "c"), ("b", "c"), ("c", "__target__"), ("x", "__target__")]
    return GraphDoc(ops=ops, edges=[GraphEdge(u, v, 0, 0, "float32", [], status="passes") for u, v in pairs])


def _tangled() -> GraphDoc:
    """Two inputs each feeding two ops (K2,2): one crossing whatever the order, so our
    layout always leaves it and ``dot`` is asked. ``r`` and ``s`` feed one op each: on the
    wrong side of p and q they add five more."""
    names = ["p", "q", "r", "s", "m", "n", "__target__"]
    ops = [GraphOp(n, n, "Target" if n == "__target__" else "Op", "", on_path=True) for n in names]
    pairs = [
        ("p", "m"),
        ("p", "n"),
        ("q", "m"),
        ("q", "n"),
        ("r", "m"),
        ("s", "n"),
        ("m", "__target__"),
        ("n", "__target__"),
    ]
    return GraphDoc(ops=ops, edges=[GraphEdge(u, v, 0, 0, "float32", [], status="passes") for u, v in pairs])


def _edges(doc: GraphDoc) -> list[tuple[str, str]]:
    return [(e.src, e.dst) for e in doc.edges]


def _check_ordering(o: layered.Ordering) -> None:
    real = [n for L in o.layers for n in L if not n.startswith("\0")]
    assert sorted(real) == sorted(["x", "y", "a", "b", "c", "__target__"])
    rank = {n: i for i, L in enumerate(o.layers) for n in L}
    assert rank["x"] < rank["b"] < rank["c"] < rank["__target__"]
    assert all(rank[v] == rank[u] + 1 for u, v in o.edges)  # proper: dummies fill long edges
    assert len(o.chains[("x", "__target__")]) == rank["__target__"] - rank["x"] - 1


@pytest.mark.skipif(not HAVE_DOT, reason="Graphviz dot is not installed (make graphviz)")
def test_small_group_with_crossings_is_ordered_by_dot():
    gl = GraphLayout(Hierarchy(_tangled()))
    assert gl.use_dot
    scene = gl.place({ROOT})
    assert gl.engine[(ROOT, False)] == "dot"
    o = gl.ordering(ROOT, False)
    assert layered.crossings(o) == 1  # K2,2 can't do better
    assert set(scene.nodes) == {"p", "q", "r", "s", "m", "n", "__target__"}


def test_dot_is_not_started_where_our_ordering_has_no_crossing(monkeypatch):
    asked = []
    monkeypatch.setattr(dot_order, "dot_orderings", lambda jobs, *a, **k: asked.append(jobs) or {})
    monkeypatch.setattr(dot_order, "dot_program", lambda: "/usr/bin/dot")
    gl = GraphLayout(Hierarchy(_graph()))
    assert gl.use_dot
    gl.place({ROOT})
    o = gl.ordering(ROOT, False)
    _check_ordering(o)
    assert layered.crossings(o) == 0  # ours untangles the crossing chains itself
    assert gl.engine[(ROOT, False)] == "own" and asked == [{}]


def test_dot_ordering_with_more_crossings_is_not_kept(monkeypatch):
    bad = layered.Ordering(
        [["s", "p", "q", "r"], ["m", "n"], ["__target__"]], [(u, v) for u, v in _edges(_tangled())], {}
    )
    assert layered.crossings(bad) == 6
    monkeypatch.setattr(dot_order, "dot_orderings", lambda jobs, *a, **k: dict.fromkeys(jobs, bad))
    monkeypatch.setattr(dot_order, "dot_program", lambda: "/usr/bin/dot")
    gl = GraphLayout(Hierarchy(_tangled()))
    gl.place({ROOT})
    assert gl.engine[(ROOT, False)] == "own"
    assert layered.crossings(gl.ordering(ROOT, False)) == 1


def test_without_dot_our_layout_is_used(monkeypatch, qapp):
    monkeypatch.setattr(dot_order.shutil, "which", lambda _name: None)
    gl = GraphLayout(Hierarchy(_graph()))
    assert not gl.use_dot
    gl.place({ROOT})
    assert gl.engine[(ROOT, False)] == "own"
    _check_ordering(gl.ordering(ROOT, False))
    view = GraphView()  # the whole view works without dot
    from tfviz.report import Report

    view.set_report(Report(script="x.py", target="loss", graph=_graph()))
    assert set(view.node_items) == {"x", "y", "a", "b", "c", "__target__"}
    assert view.gl.engine[(ROOT, False)] == "own"


@pytest.mark.skipif(not HAVE_DOT, reason="Graphviz dot is not installed (make graphviz)")
def test_slow_dot_falls_back_within_the_budget(monkeypatch, tmp_path):
    """A ``dot`` that has not answered by the end of the budget (here one that only sleeps) is
    not waited for: our ordering stays, within the budget."""
    import time

    slow = tmp_path / "slow_dot"
    slow.write_text("#!/bin/sh\nexec sleep 5\n")
    slow.chmod(0o755)
    monkeypatch.setattr(dot_order, "dot_program", lambda: str(slow))
    monkeypatch.setattr(dot_order, "TIMEOUT_S", 0.3)
    gl = GraphLayout(Hierarchy(_tangled()))
    assert gl.use_dot
    start = time.perf_counter()
    gl.place({ROOT})
    assert time.perf_counter() - start < 3.0
    assert gl.engine[(ROOT, False)] == "own"


def test_failing_dot_falls_back(monkeypatch):
    monkeypatch.setattr(dot_order, "dot_program", lambda: shutil.which("false") or "/bin/false")
    gl = GraphLayout(Hierarchy(_tangled()))
    assert gl.use_dot
    gl.place({ROOT})
    assert gl.engine[(ROOT, False)] == "own"
    assert layered.crossings(gl.ordering(ROOT, False)) == 1


def test_parse_plain_places_dummies_where_the_spline_crosses():
    nodes, edges = ["u", "m", "v"], [("u", "m"), ("m", "v"), ("u", "v")]
    plain = "\n".join(
        [
            "graph 1 3 3",
            'node n0 1 3 1 0.5 "" solid box black lightgrey',
            'node n1 0.5 2 1 0.5 "" solid box black lightgrey',
            'node n2 1 1 1 0.5 "" solid box black lightgrey',
            "edge n0 n2 4 1 3 2 2.5 2 1.5 1 1 solid black",
            "stop",
        ]
    )
    o = dot_order.parse_plain(plain, nodes, edges)
    assert o.layers[0] == ["u"] and o.layers[2] == ["v"]
    assert o.layers[1][0] == "m" and o.layers[1][1].startswith("\0")  # the skip edge passes right of m
