"""A ``tf.custom_gradient`` that returns None for an input cuts the gradient there.

The copy of the eager call holds the function's forward ops, which connect the input to
the loss; TensorFlow's gradient is the user's Python function instead. tfviz found the
variable connected, TensorFlow disconnected, and it said "please report this case". It
now names the function and its gradient function's line. TensorFlow is the oracle.
"""

from __future__ import annotations

import json
import runpy

from tests.conftest import ROOT
from tests.test_commands import tfviz

PROGRAM = ROOT / "tests" / "programs" / "custom" / "gradient_returns_none.py"


def test_a_custom_gradient_that_returns_none_is_named_as_the_cut_at_its_gradient_function(tmp_path):
    import tensorflow as tf

    done = tfviz("check", str(PROGRAM), "--json", "--graph", "g.json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    script = runpy.run_path(str(PROGRAM))
    with tf.GradientTape() as tape:
        value = script["loss"]()
    grads = tape.gradient(value, [script["w"], script["v"]])
    assert grads[0] is not None and grads[1] is None
    by_name = {v["name"]: v for v in report["variables"]}
    assert by_name["w"]["status"] == "connected" and by_name["w"]["kind"] is None
    assert by_name["v"]["status"] == "disconnected" and by_name["v"]["kind"] == "not_differentiable"
    assert "tf.custom_gradient function scaled returns no gradient (None)" in by_name["v"]["explanation"]
    (p,) = report["problems"]
    assert p["kind"] == "not_differentiable" and p["variables"] == ["v"]
    grad_line = next(i for i, ln in enumerate(PROGRAM.read_text().splitlines(), 1) if "def grad(dy)" in ln)
    assert p["source"]["line"] == grad_line and p["source"]["code"] == "def grad(dy):"
    assert "please report" not in json.dumps(report)
    ops = {o["id"]: o for o in json.loads((tmp_path / "g.json").read_text())["graph"]["ops"]}
    assert ops[p["op"]]["label"] == "scaled (custom gradient)"  # drawn as the function written
