"""When tfviz's reasoning and TensorFlow disagree, TensorFlow wins and it shows."""

from __future__ import annotations

import pytest

from tests.conftest import EXAMPLES
from tfviz.engine import gradrules
from tfviz.report import EDGE_PASSES


def test_static_passes_but_tensorflow_finds_no_gradient(monkeypatch):
    from tfviz.analysis.diagnose import analyze

    real = gradrules.port_verdict

    def blind_to_stop_gradient(g, u, v, dst_in, prober):
        if g.nodes[v].get("type") == "StopGradient":
            return gradrules.PortVerdict(EDGE_PASSES)
        return real(g, u, v, dst_in, prober)

    monkeypatch.setattr(gradrules, "port_verdict", blind_to_stop_gradient)
    report = analyze(str(EXAMPLES / "kind_stop_gradient.py"))
    teacher = next(v for v in report.variables if v.name == "teacher")
    assert (teacher.status, teacher.kind) == ("disconnected", "other")
    (p,) = [p for p in report.problems if p.kind == "other"]
    assert p.severity == "error" and "tape.gradient" in p.message and p.variables == ["teacher"]
    assert not report.ok


def test_probe_that_wrongly_raises_is_overruled_and_reported(monkeypatch):
    from tfviz.analysis.diagnose import analyze

    real = gradrules._probe

    def tanh_raises(op):
        if op.type == "Tanh":
            return [gradrules.PortVerdict("unimplemented", "pretend")] * len(op.inputs)
        return real(op)

    monkeypatch.setattr(gradrules, "_probe", tanh_raises)
    report = analyze(str(EXAMPLES / "healthy_control_flow.py"))
    assert all(v.status == "connected" for v in report.variables)
    (p,) = report.problems
    assert p.kind == "other" and p.severity == "warning" and p.op_type == "Tanh"
    assert report.ok


@pytest.mark.parametrize("kind", ["unimplemented", "no_gradient"])
def test_raising_kinds_fail_the_whole_call(analyze_example, kind):
    name = {"unimplemented": "seed1_svd_dynamic_shape.py", "no_gradient": "kind_no_gradient.py"}[kind]
    report = analyze_example(name)
    assert all(v.status == "broken" and v.kind == kind for v in report.variables)
    assert all(v.blocked_at for v in report.variables)
