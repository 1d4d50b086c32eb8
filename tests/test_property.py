"""Random small programs: every verdict equals what tape.gradient does.

Hypothesis writes scripts that mix differentiable, non-differentiable
(round), integer (a cast round trip) and stop-gradient ops over several
variables; tfviz analyses each as a user's script and TensorFlow decides.
"""

from __future__ import annotations

import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import tensorflow_truth

UNARY = {
    "tanh": "tf.tanh({a})",
    "square": "tf.square({a})",
    "round": "tf.round({a})",
    "int": "tf.cast(tf.cast({a}, tf.int32), tf.float32)",
    "stop": "tf.stop_gradient({a})",
    "sign": "tf.sign({a})",
    "bool": "tf.cast({a} > 0.5, tf.float32)",
}
BINARY = {"add": "({a} + {b})", "mul": "({a} * {b})", "max": "tf.maximum({a}, {b})"}


@st.composite
def programs(draw):
    n_vars = draw(st.integers(1, 4))
    values = [f"v{i}" for i in range(n_vars)]
    lines = []
    for j in range(draw(st.integers(1, 7))):
        if draw(st.booleans()) and len(values) > 1:
            a, b = draw(st.sampled_from(values)), draw(st.sampled_from(values))
            expr = BINARY[draw(st.sampled_from(sorted(BINARY)))].format(a=a, b=b)
        else:
            a = draw(st.sampled_from(values))
            expr = UNARY[draw(st.sampled_from(sorted(UNARY)))].format(a=a)
        lines.append(f"h{j} = {expr}")
        values.append(f"h{j}")
    outs = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3, unique=True))
    return n_vars, lines, outs


def _script(n_vars, lines, outs) -> str:
    decl = "\n".join(
        f"v{i} = tf.Variable([{0.3 + i:.1f}, {-0.7 - i:.1f}], name='v{i}')" for i in range(n_vars)
    )
    body = textwrap.indent("\n".join(lines), "    ")
    total = " + ".join(f"tf.reduce_sum({o})" for o in outs)
    return f"import tensorflow as tf\n\n{decl}\n\n\ndef loss():\n{body}\n    return {total} + 0.0\n"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs())
def test_random_programs_agree_with_tape_gradient(tmp_path_factory, program):
    from tfviz.analysis.diagnose import analyze

    path = tmp_path_factory.mktemp("prog") / "prog.py"
    path.write_text(_script(*program))
    report = analyze(str(path))
    names = [v.name for v in report.variables]
    assert sorted(names) == [f"v{i}" for i in range(program[0])]
    truth = tensorflow_truth(str(path), names, zeros=True)
    for v in report.variables:
        # An all-zero gradient (tf.sign, a maximum that picks the other operand) is `zero`.
        seen = "zero" if v.kind == "zero" else v.status
        assert seen == truth[v.name], (v.name, v.kind, path.read_text())
        # A disconnected variable always carries a kind the user can act on.
        if v.status == "disconnected":
            assert v.kind in {"not_differentiable", "integer", "stop_gradient", "not_read"}, v
    assert report.ok == all(v.status == "connected" and v.kind is None for v in report.variables)
