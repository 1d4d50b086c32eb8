"""Two fast paths and their slow twin: an eager call's copy takes each op's gradient verdict
from TensorFlow's own backward pass over that call (``Prober.answered``), where the probe
builds the op's gradient function again in a graph of its own; and an edge into the
variables' paths from outside them is given no status (``STATUS_FROM_OUTSIDE``), where the
twin probes it too. For every ``loss()`` script and every bundled training program, both
give the same report: every variable's status and kind, every problem with its op and line,
and every op's and edge's status (an op's with its message)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT
from tests.test_copy_vs_trace import SCRIPTS


def _analysis(path: Path, answered: bool, monkeypatch, outside: bool | None = None):
    from tfviz.analysis import diagnose
    from tfviz.engine import gradrules
    from tfviz.errors import AnalysisError

    monkeypatch.setattr(gradrules, "ANSWERED", answered)
    # the slow twin probes every port; the fast path skips edges from outside the paths
    monkeypatch.setattr(gradrules, "STATUS_FROM_OUTSIDE", not answered if outside is None else outside)
    try:
        done = diagnose.analysis(str(path))
    except AnalysisError as exc:
        return {"error": (exc.message, exc.line)}, None
    report = done.report
    # by place in the graph, not by name: the second analysis in one process names its layers
    # anew (``sequential_1``)
    at = {o.id: i for i, o in enumerate(report.graph.ops)}
    summary = {
        # (a message may quote a gradient's size, which rounding moves from run to run)
        "variables": sorted((v.name, v.status, v.kind) for v in report.variables),
        "problems": sorted(
            (
                p.kind,
                p.severity,
                at.get(p.op, -1),
                p.op_type,
                p.source.line if p.source else None,
            )
            for p in report.problems
        ),
        "edges": sorted(
            (at.get(e.src), at.get(e.dst), e.src_output, e.dst_input, e.status, at.get(e.cut_at), e.needed)
            for e in report.graph.edges
        ),
        "ops": [
            (o.type, o.status, _unnamed(o.message), o.on_path, at.get(o.cut_at)) for o in report.graph.ops
        ],
        "ok": report.ok,
    }
    return summary, report.timings_s.get("probes")


def _unnamed(message: str) -> str:
    """A message without the op names it quotes (``cut at Placeholder '...'``)."""
    return re.sub(r"'[^']*'", "'…'", message)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_tapes_answers_and_the_probes_agree(path, monkeypatch):
    probed, probes = _analysis(path, False, monkeypatch)
    answered, fewer = _analysis(path, True, monkeypatch)
    assert answered == probed
    if probes is not None and fewer is not None:
        assert fewer <= probes


PROGRAMS = sorted(p for p in EXAMPLES.glob("*.py") if p.name.startswith(("program_", "train_")))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_a_programs_edges_from_outside_its_paths_change_nothing(path, monkeypatch):
    """A training program's step is traced, and every port in it probed but those of edges
    from outside the variables' paths: the report is the one that probes those too."""
    everything, probes = _analysis(path, False, monkeypatch, outside=True)
    fewer_edges, fewer = _analysis(path, False, monkeypatch, outside=False)
    assert fewer_edges == everything
    if probes is not None and fewer is not None:
        assert fewer <= probes


def test_the_tapes_answers_spare_the_probes(monkeypatch):
    """On a model whose every op is differentiated, nearly nothing is left to probe."""
    path = ROOT / "resources" / "examples" / "seed2_frozen_copy.py"
    _, probes = _analysis(path, False, monkeypatch)
    _, fewer = _analysis(path, True, monkeypatch)
    assert probes and fewer is not None and fewer < probes / 2, (fewer, probes)


@pytest.mark.parametrize("name", ["healthy_batchnorm.py", "kind_stop_gradient.py"])
def test_a_port_fed_by_a_stopped_gradient_is_answered_by_the_tape_not_probed(name, monkeypatch):
    """The tape skips an input fed by ``tf.stop_gradient`` (batch norm's variance, from the
    stopped mean): the op's gradient function is asked of it once more in the same pass, so
    the port needs no probe, and the report is the probed one."""
    from tfviz.engine import gradrules

    probed_types: list[str] = []
    probe = gradrules._probe

    def noting(op):
        probed_types.append(op.type)
        return probe(op)

    monkeypatch.setattr(gradrules, "_probe", noting)
    path = ROOT / "resources" / "examples" / name
    twin, _ = _analysis(path, False, monkeypatch)
    stopped = {"healthy_batchnorm.py": "SquaredDifference", "kind_stop_gradient.py": "Sub"}[name]
    assert stopped in probed_types  # the slow twin probes it
    probed_types.clear()
    answered, _ = _analysis(path, True, monkeypatch)
    assert answered == twin
    assert stopped not in probed_types
