"""The vocabulary is closed: every word the engine can write has a look, a legend entry and
advice, and survives JSON as the plain word a reader in another process compares with."""

from __future__ import annotations

import json

import pytest

from tfviz.engine import explain, magnitude
from tfviz.palette import SEVERITY, STYLES, category, worst
from tfviz.report import GraphEdge, GraphOp, Problem, Report, VariableReport
from tfviz.vocabulary import Category, Flow, Kind, Severity, Status


@pytest.mark.parametrize("kind", list(Kind))
def test_every_kind_has_a_look_a_rank_and_advice(kind: Kind) -> None:
    look = category(kind)
    assert look in STYLES and look in SEVERITY
    assert kind in explain.HINT or kind in magnitude.HINT, f"no advice for {kind}"


def test_every_legend_entry_is_styled_ranked_and_reachable() -> None:
    assert set(STYLES) == set(Category) == set(SEVERITY)
    reachable = {category(w) for w in [*Kind, *Flow]} | {Category.MUTED}
    assert reachable == set(Category)
    # one colour per look: a reader of the legend can tell each apart
    assert len({s.color for s in STYLES.values()}) == len(STYLES)


def test_members_cross_json_as_their_words_and_compare_equal() -> None:
    r = Report(script="s.py", target="loss", ok=False)
    r.variables.append(VariableReport("w", "w:0", "float32", [2], Status.DISCONNECTED, Kind.STOP_GRADIENT))
    r.problems.append(
        Problem(
            kind=Kind.STOP_GRADIENT, severity=Severity.ERROR, op="sg", op_type="StopGradient", message="m"
        )
    )
    r.graph.ops.append(GraphOp(id="sg", name="sg", type="StopGradient", scope="", status=Kind.STOP_GRADIENT))
    r.graph.edges.append(
        GraphEdge(
            src="var:w", dst="sg", src_output=0, dst_input=0, dtype="float32", shape=[2], status=Flow.PASSES
        )
    )
    text = json.dumps(r.to_dict())
    assert '"status": "disconnected"' in text and '"kind": "stop_gradient"' in text
    assert "Status." not in text and "Kind." not in text
    back = Report.from_dict(json.loads(text))
    assert back == r
    assert type(back.variables[0].status) is str and back.variables[0].status == Status.DISCONNECTED


def test_the_worst_of_merged_edges_follows_the_rank() -> None:
    assert worst([Flow.PASSES, Kind.NO_GRADIENT, Kind.ZERO]) == Kind.NO_GRADIENT
    assert worst([Flow.OFF_PATH]) == Flow.OFF_PATH
