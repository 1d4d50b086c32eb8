"""Every bundled example gives its expected verdict, and agrees with TensorFlow."""

from __future__ import annotations

import pytest

from tests.conftest import EXAMPLES, line_of, saved_and_opened, tensorflow_truth

# example -> {variable: (status, kind)}; ok follows from them.
EXPECTED = {
    "seed1_svd_dynamic_shape.py": {
        **{f"upper[{i}]": ("broken", "unimplemented") for i in range(3)},
        **{f"lower[{i}]": ("broken", "unimplemented") for i in range(3)},
    },
    "seed2_frozen_copy.py": {
        "model.layers[0].trainable_variables[0]": ("disconnected", "frozen_copy"),
        "model.layers[1].kernel": ("connected", None),
        "model.layers[1].bias": ("connected", None),
    },
    "seed3_chain_rule.py": {"w": ("connected", None)},
    "kind_no_gradient.py": {"image": ("broken", "no_gradient")},
    "kind_not_differentiable.py": {"w": ("disconnected", "not_differentiable"), "b": ("connected", None)},
    "kind_integer.py": {"scale": ("disconnected", "integer"), "bias": ("connected", None)},
    "kind_integer_stack.py": {"offset": ("disconnected", "integer"), "bias": ("connected", None)},
    "kind_integer_while.py": {"rate": ("disconnected", "integer"), "bias": ("connected", None)},
    "kind_zero_dead_relu.py": {
        "w": ("connected", None),
        "dead": ("connected", "zero"),
        "muted": ("connected", "zero"),
    },
    "kind_zero_cond.py": {"w": ("connected", None), "fallback": ("connected", "zero")},
    "kind_zero_cond_in_loop.py": {
        "W_h": ("connected", "zero"),
        "W_aux": ("connected", "zero"),
        "W_gate": ("disconnected", "integer"),
    },
    "kind_stop_gradient.py": {"teacher": ("disconnected", "stop_gradient"), "student": ("connected", None)},
    "kind_not_read.py": {"used": ("connected", None), "forgotten": ("disconnected", "not_read")},
    "kind_frozen_copy_import.py": {"weight": ("disconnected", "frozen_copy")},
    "kind_assign.py": {"w": ("disconnected", "assign")},
    "kind_py_function.py": {"w": ("disconnected", "py_function")},
    "kind_nan.py": {"w": ("connected", "nan")},
    "kind_other_untraceable.py": {"gain": ("disconnected", "not_read"), "w": ("connected", None)},
    "healthy_control_flow.py": {
        "w": ("connected", None),
        "table": ("connected", None),
        "gate": ("connected", None),
    },
    "transformer_stop_gradient.py": {
        **{
            f"model.block.mha.{d}_dense.{w}": ("disconnected", "stop_gradient")
            for d in ("query", "key", "value", "output")
            for w in ("kernel", "bias")
        },
        **{
            f"model.{v}": ("connected", None)
            for v in (
                "embed.embeddings",
                "position.embeddings",
                "block.norm1.gamma",
                "block.norm1.beta",
                "block.ff1.kernel",
                "block.ff1.bias",
                "block.ff2.kernel",
                "block.ff2.bias",
                "block.norm2.gamma",
                "block.norm2.beta",
                "classifier.kernel",
                "classifier.bias",
            )
        },
    },
    "unet_healthy.py": {  # its layers are named, so their variables are named through them
        **{
            f'model.get_layer("{b}_conv").kernel': ("connected", None)
            for b in ("down1", "down2", "bottleneck", "up2", "up1")
        },
        **{
            f'model.get_layer("{b}_bn").{w}': ("connected", None)
            for b in ("down1", "down2", "bottleneck", "up2", "up1")
            for w in ("gamma", "beta")
        },
        **{
            f'model.get_layer("{b}").{w}': ("connected", None)
            for b in ("up2_transpose", "up1_transpose", "mask_logits")
            for w in ("kernel", "bias")
        },
    },
    "rnn_while_int_cast.py": {
        "cell.w_x": ("connected", None),
        "cell.w_h": ("connected", None),
        "cell.b": ("connected", None),
        "cell.w_skip": ("disconnected", "integer"),
        "readout.kernel": ("connected", None),
        "readout.bias": ("connected", None),
    },
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_verdicts(analyze_example, name):
    report = analyze_example(name)
    got = {v.name: (v.status, v.kind) for v in report.variables}
    assert got == EXPECTED[name]
    assert report.ok == all(s == "connected" and k is None for s, k in EXPECTED[name].values())
    # every problem at a line of the example (a CI annotation, ``problem.source.line``)
    assert all(p.source and p.source.line and p.source.file == report.script for p in report.problems)


def test_a_zero_no_op_can_be_blamed_for_is_placed_where_its_variable_was_made(analyze_example):
    """TensorFlow's gradient of W_h is zero, through a loop body whose gradients are not
    measured, so no op takes the blame: the problem is put at the line that made W_h."""
    report = analyze_example("kind_zero_cond_in_loop.py")
    (p,) = [p for p in report.problems if p.variables == ["W_h"]]
    assert (p.kind, p.op) == ("zero", "")
    assert p.source.line == line_of(EXAMPLES / "kind_zero_cond_in_loop.py", "W_h = tf.Variable(")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_examples_analysis_saves_to_the_schema_and_opens_again(analyze_example, name):
    saved_and_opened(analyze_example(name))


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if n != "kind_other_untraceable.py"))
def test_verdicts_match_tape_gradient(analyze_example, name):
    report = analyze_example(name)
    truth = tensorflow_truth(str(EXAMPLES / name), [v.name for v in report.variables], zeros=True)
    for v in report.variables:
        expected = v.kind if v.kind in ("nan", "zero") else v.status
        if v.status == "disconnected" and "returns a tensor of zeros" in v.explanation:
            expected = "zero"  # TensorFlow's zeros for a cut path inside tf.while_loop / tf.cond
        assert truth[v.name] == expected, v.name


def test_seed1_names_the_svd_ops_at_the_users_line(analyze_example):
    report = analyze_example("seed1_svd_dynamic_shape.py")
    svd = [p for p in report.problems if p.op_type == "Svd"]
    assert svd and all(p.kind == "unimplemented" and p.severity == "error" for p in svd)
    for p in svd:
        assert p.source.file.endswith("seed1_svd_dynamic_shape.py")
        assert "tf.linalg.svd" in p.source.code
        assert "unknown inner matrix shape" in p.message
    # The first SVD has a static shape and is not flagged.
    flagged = {p.op for p in svd}
    static = [o for o in report.graph.ops if o.type == "Svd" and o.id not in flagged]
    assert static, "expected one SVD with known shapes that is not flagged"
    assert {v.name for v in report.variables if v.status == "broken"} == {
        *(f"upper[{i}]" for i in range(3)),
        *(f"lower[{i}]" for i in range(3)),
    }


def test_seed2_names_the_attribute_holding_the_copy(analyze_example):
    report = analyze_example("seed2_frozen_copy.py")
    (p,) = [p for p in report.problems if p.kind == "frozen_copy"]
    assert "model.layers[0].weights2" in p.message
    assert p.source and "tf.reshape(weights" in p.source.code
    # the graph names the copy as the script holds it, not by TensorFlow's "MatMul/b"
    (copy,) = [o for o in report.graph.ops if o.id == p.op]
    assert copy.label == "model.layers[0].weights2"
    assert [o.label for o in report.graph.ops if o.label] == [copy.label]  # nothing else is held


def test_integer_cut_names_the_cast_not_its_consumer(analyze_example):
    report = analyze_example("kind_integer_stack.py")
    (p,) = [p for p in report.problems if p.kind == "integer"]
    assert (p.op_type, p.variables) == ("Cast", ["offset"])
    assert "tf.cast(offset, tf.int32)" in p.source.code
    (offset,) = [v for v in report.variables if v.name == "offset"]
    assert offset.blocked_at == [p.op] and "Cast" in offset.explanation


def test_nan_names_the_op_where_it_starts(analyze_example):
    report = analyze_example("kind_nan.py")
    (p,) = [p for p in report.problems if p.kind == "nan"]
    assert p.op_type == "Sqrt"


def test_healthy_code_has_no_problems(analyze_example):
    report = analyze_example("healthy_control_flow.py")
    assert report.ok and report.problems == []
    assert len(report.graph.functions) >= 4  # cond branches, loop cond/body, inner function


def test_untraceable_target_is_drawn_from_its_eager_run(analyze_example):
    """tf.function cannot trace .numpy(); the eager call, copied as it ran, still draws the
    step, and names where the value leaves TensorFlow (TensorFlow gives `gain` None)."""
    report = analyze_example("kind_other_untraceable.py")
    assert report.traced and report.graph.ops
    (p,) = report.problems
    assert p.kind == "not_read" and p.variables == ["gain"]
    assert "read out into Python there (.numpy())" in p.message  # gain.numpy(), on that line
    assert p.source.line == 14 and p.severity == "error"  # the step's own code cut it


def test_gradient_norms_on_paths(analyze_example):
    report = analyze_example("seed3_chain_rule.py")
    (w,) = report.variables
    assert w.grad_norm == pytest.approx(14.142, rel=1e-3)
    on_path = [e for e in report.graph.edges if e.status == "passes" and e.grad_norm is not None]
    assert on_path, "tensors on the path carry gradient norms"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["healthy_mobilenet_v2.py", "healthy_resnet50.py"])
def test_keras_applications_report_ok(analyze_example, name):
    report = analyze_example(name)
    assert report.ok, [p.message for p in report.problems]
    assert len(report.variables) > 100
    assert all(v.status == "connected" for v in report.variables)


def test_frozen_copy_when_the_script_builds_the_model_itself(tmp_path):
    """The copy is made at import instead of on the first call: same verdict."""
    from tfviz.analysis.diagnose import analyze

    text = (EXAMPLES / "seed2_frozen_copy.py").read_text()
    text = text.replace("\n\ndef loss():", "\nmodel(x_train[:1])  # built here, at import\n\n\ndef loss():")
    path = tmp_path / "built_at_import.py"
    path.write_text(text)
    report = analyze(str(path))
    kinds = {v.name: v.kind for v in report.variables}
    assert kinds["model.layers[0].trainable_variables[0]"] == "frozen_copy"
    assert any("model.layers[0].weights2" in p.message for p in report.problems)


def _documented_commands() -> list[tuple[str, list[str]]]:
    """Every ``tfviz ...`` command line an example's docstring shows, continuations joined,
    a trailing ``(exits 0)`` dropped: (example, argv)."""
    import ast
    import shlex

    out = []
    for path in sorted(EXAMPLES.glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        lines = doc.replace("\\\n", " ").splitlines()
        for line in lines:
            line = line.strip()
            if line.split()[:2] in (["tfviz", c] for c in ("check", "jacobian", "export")):
                out.append((path.name, shlex.split(line.split("  (")[0])))
    return out


@pytest.mark.parametrize(
    "name,argv", _documented_commands(), ids=[" ".join(a[1:3]) for _, a in _documented_commands()]
)
def test_every_command_an_example_shows_runs_as_shown(name, argv):
    """A user copies the command from the example's docstring and runs it in the examples'
    folder: it runs (a tensor it names exists, a flag it passes is one tfviz takes), and
    ends with a verdict, never a refusal."""
    import subprocess
    import sys
    from pathlib import Path

    tfviz = str(Path(sys.executable).with_name("tfviz"))
    done = subprocess.run(
        [tfviz, *argv[1:]],
        cwd=EXAMPLES,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode in (0, 1), f"{name}: {' '.join(argv)}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr
    assert name in " ".join(argv)
