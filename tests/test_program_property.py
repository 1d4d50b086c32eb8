"""Program mode reaches the same verdicts as the same step written as loss().

Hypothesis writes random small computations (tests/test_property.py); each
is analyzed once as a ``loss()`` target and once as a program whose training
step asks ``tape.gradient`` for it, either in a module-level tape block or
inside a ``tf.function`` step. The two reports must agree variable by
variable, and the program's verdicts are TensorFlow's (test_property checks
the target side against tape.gradient).
"""

from __future__ import annotations

import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_property import _script, programs


def _program(n_vars: int, lines: list[str], outs: list[str], in_function: bool) -> str:
    decl = _script(n_vars, lines, outs).split("\n\n\ndef loss")[0]
    body = "\n".join(lines)
    total = " + ".join(f"tf.reduce_sum({o})" for o in outs) + " + 0.0"
    sources = "[" + ", ".join(f"v{i}" for i in range(n_vars)) + "]"
    step = f"{body}\nvalue = {total}"
    if in_function:
        inner = textwrap.indent(
            f"with tf.GradientTape() as tape:\n{textwrap.indent(step, '    ')}\n"
            f"return tape.gradient(value, {sources})",
            "    ",
        )
        return f"{decl}\n\n\n@tf.function\ndef train_step():\n{inner}\n\n\ntrain_step()\n"
    return (
        f"{decl}\n\nwith tf.GradientTape() as tape:\n{textwrap.indent(step, '    ')}\n"
        f"grads = tape.gradient(value, {sources})\n"
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs(), st.booleans())
def test_program_mode_equals_target_mode(tmp_path_factory, program, in_function):
    from tfviz.analysis.diagnose import analyze

    folder = tmp_path_factory.mktemp("same")
    target, prog = folder / "target.py", folder / "prog.py"
    target.write_text(_script(*program))
    prog.write_text(_program(*program, in_function))
    as_target = analyze(str(target))
    as_program = analyze(str(prog))
    assert (as_target.mode, as_program.mode) == ("target", "program")
    got = {v.name: (v.status, v.kind) for v in as_program.variables}
    want = {v.name: (v.status, v.kind) for v in as_target.variables}
    assert got == want, prog.read_text()
    assert as_program.ok == as_target.ok
