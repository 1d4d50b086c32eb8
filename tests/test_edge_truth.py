"""Edge colours tell the truth: no gradient arrives at a ``starved`` edge, and a cut no
variable needs is marked ``needed=False`` (drawn muted). TensorFlow is the ground truth."""

from __future__ import annotations

import pytest

from tests.conftest import EXAMPLES, tensorflow_truth
from tfviz.report import EDGE_OFF_PATH, EDGE_PASSES, EDGE_STARVED


def _var_edges(report, status: str) -> set[str]:
    return {
        e.src.removeprefix("var:")
        for e in report.graph.edges
        if e.src.startswith("var:") and e.status == status
    }


@pytest.mark.parametrize(
    "name",
    ["kind_stop_gradient_layer.py", "kind_stop_gradient.py", "kind_integer.py", "seed2_frozen_copy.py"],
)
def test_starved_edges_are_exactly_where_tape_gradient_gives_none(analyze_example, name):
    report = analyze_example(name)
    truth = tensorflow_truth(str(EXAMPLES / name), [v.name for v in report.variables])
    none = {n for n, s in truth.items() if s == "disconnected"}
    assert none, "the example must have a variable with no gradient"
    starved = _var_edges(report, EDGE_STARVED)
    # a variable's own edge is starved exactly when TensorFlow gives it no gradient (a cut
    # right at the variable, as a frozen copy, leaves its edge a cut instead)
    assert starved <= none
    assert not _var_edges(report, EDGE_PASSES) & none
    ops = {o.id: o for o in report.graph.ops}
    for e in report.graph.edges:
        if e.status == EDGE_STARVED:
            assert e.cut_at in ops and ops[e.cut_at].status not in (
                EDGE_PASSES,
                EDGE_OFF_PATH,
                EDGE_STARVED,
            ), e
    if name == "kind_stop_gradient_layer.py":
        assert len(starved) == 4
        cut = {e.cut_at for e in report.graph.edges if e.status == EDGE_STARVED}
        assert {ops[c].type for c in cut} == {"StopGradient"}
        assert all(
            o.message.startswith("no gradient arrives here: cut at StopGradient")
            for o in report.graph.ops
            if o.status == EDGE_STARVED
        )


def test_healthy_batchnorm_has_only_unneeded_cuts(analyze_example):
    report = analyze_example("healthy_batchnorm.py")
    assert report.ok
    truth = tensorflow_truth(str(EXAMPLES / "healthy_batchnorm.py"), [v.name for v in report.variables])
    assert set(truth.values()) == {"connected"}
    cuts = [e for e in report.graph.edges if e.status not in (EDGE_PASSES, EDGE_OFF_PATH)]
    assert any(e.status == "stop_gradient" for e in cuts), "BatchNorm's moments keep their cut"
    assert all(not e.needed for e in cuts)
    assert not any(e.status == EDGE_STARVED for e in report.graph.edges)


def test_a_needed_cut_stays_needed(analyze_example):
    report = analyze_example("kind_stop_gradient.py")
    sg = [e for e in report.graph.edges if e.status == "stop_gradient"]
    assert sg and all(e.needed for e in sg)
