"""Engine precision: the op named for an integer cut, zeros that mean a cut,
the ``zero`` warning, and gradient norms inside nested function bodies.

TensorFlow is the ground truth: each test asks ``tape.gradient`` itself.
"""

from __future__ import annotations

import runpy

import pytest

from tests.conftest import EXAMPLES, tensorflow_truth
from tfviz.engine import gradrules
from tfviz.engine.trace import SLICE_ON_CPU, read_halves, sq_norm_of


def _eager_grads(path: str, names: list[str]) -> dict:
    """``tape.gradient`` run eagerly, as a plain Python loop runs the target."""
    import tensorflow as tf

    ns = runpy.run_path(path, run_name="tfviz_truth")
    with tf.GradientTape() as tape:
        value = ns["loss"]()
    grads = tape.gradient(value, [ns[n] for n in names])
    return dict(zip(names, grads))


def test_argmax_is_named_for_an_integer_cut(tmp_path):
    from tfviz.analysis.diagnose import analyze

    path = tmp_path / "argmax.py"
    path.write_text(
        "import tensorflow as tf\n\n"
        "logits = tf.Variable([0.2, 0.9, 0.1], name='logits')\n\n\n"
        "def loss():\n"
        "    picked = tf.one_hot(tf.argmax(logits), 3)\n"
        "    return tf.reduce_sum(picked * tf.constant([1.0, 2.0, 3.0]))\n"
    )
    report = analyze(str(path))
    assert tensorflow_truth(str(path), ["logits"]) == {"logits": "disconnected"}
    (v,) = report.variables
    assert (v.status, v.kind) == ("disconnected", "integer")
    (p,) = report.problems
    assert p.op_type == "ArgMax" and p.source.line == 7


def test_zeros_from_a_while_loop_are_the_cut_not_a_disagreement(analyze_example):
    name = "kind_integer_while.py"
    path = str(EXAMPLES / name)
    # TensorFlow: zeros inside tf.function, None eagerly.
    assert tensorflow_truth(path, ["rate"], zeros=True) == {"rate": "zero"}
    assert _eager_grads(path, ["rate"])["rate"] is None
    report = analyze_example(name)
    rate = next(v for v in report.variables if v.name == "rate")
    assert (rate.status, rate.kind) == ("disconnected", "integer")
    assert "returns a tensor of zeros" in rate.explanation
    assert [p.kind for p in report.problems] == ["integer"]
    (p,) = report.problems
    assert p.op_type == "Cast" and p.source.line == 12 and rate.blocked_at == [p.op]


def test_a_real_disagreement_inside_control_flow_still_shows(monkeypatch):
    """A cut tfviz wrongly finds where TensorFlow's gradient is non-zero stays `other`."""
    from tfviz.analysis.diagnose import analyze

    real = gradrules.port_verdict

    def tanh_cuts(g, u, v, dst_in, prober):
        if g.nodes[v].get("type") == "Tanh":
            return gradrules.PortVerdict("stop_gradient", "pretend")
        return real(g, u, v, dst_in, prober)

    monkeypatch.setattr(gradrules, "port_verdict", tanh_cuts)
    report = analyze(str(EXAMPLES / "healthy_control_flow.py"))
    got = {v.name: (v.status, v.kind) for v in report.variables}
    # gate also multiplies tanh's output, so it keeps a path; the others are "cut".
    assert got == {"w": ("connected", "other"), "table": ("connected", "other"), "gate": ("connected", None)}
    others = [p for p in report.problems if p.kind == "other"]
    assert {n for p in others for n in p.variables} == {"w", "table"}
    assert all(p.severity == "error" for p in others) and not report.ok


def test_dead_relu_and_multiplication_by_zero_are_named(analyze_example):
    name = "kind_zero_dead_relu.py"
    truth = tensorflow_truth(str(EXAMPLES / name), ["w", "dead", "muted"], zeros=True)
    assert truth == {"w": "connected", "dead": "zero", "muted": "zero"}
    report = analyze_example(name)
    assert not report.ok
    by_var = {p.variables[0]: p for p in report.problems}
    assert set(by_var) == {"dead", "muted"}
    assert all(p.kind == "zero" and p.severity == "warning" for p in by_var.values())
    assert by_var["dead"].op_type == "Relu" and "tf.nn.relu" in by_var["dead"].source.code
    assert by_var["muted"].op_type == "Mul" and "muted * mask" in by_var["muted"].source.code
    dead = next(v for v in report.variables if v.name == "dead")
    assert dead.grad_norm == 0.0 and "dead ReLU" in dead.explanation


def test_untaken_cond_branch_is_said(analyze_example):
    name = "kind_zero_cond.py"
    path = str(EXAMPLES / name)
    assert tensorflow_truth(path, ["fallback"], zeros=True) == {"fallback": "zero"}
    assert _eager_grads(path, ["fallback"])["fallback"] is None
    report = analyze_example(name)
    (p,) = report.problems  # no eager/graph "other" warning: None and zeros agree
    assert (p.kind, p.op_type, p.variables) == ("zero", "If", ["fallback"])
    assert "else branch" in p.message and "not taken" in p.message


def test_text_report_never_ticks_a_zero_gradient(analyze_example):
    from tfviz.textreport import render

    text = render(analyze_example("kind_zero_dead_relu.py"))
    lines = {ln.split()[1]: ln for ln in text.splitlines() if ln.startswith("  ") and "connected" in ln}
    assert lines["w"].lstrip().startswith("ok ")
    assert not lines["dead"].lstrip().startswith("ok ") and "[zero]" in lines["dead"]
    assert "gradient problems found" in text


NESTED = """\
import tensorflow as tf

w = tf.Variable([-0.5, -1.0, 1.0], name="w")


@tf.function
def inner(h):
    return tf.tanh(h) * 2.0


def loss():
    h = w * 3.0
    y = inner(h)
    z = tf.cond(tf.reduce_sum(w) > 0.0, lambda: y * y, lambda: y * 3.0 - 1.0)
    return tf.reduce_sum(z)
"""


def test_norms_inside_nested_bodies_match_tape_gradient(tmp_path):
    """The inner function's argument and result, and the taken cond branch's,
    carry TensorFlow's own gradient norms; the branch not taken carries none."""
    import numpy as np
    import tensorflow as tf

    from tfviz.analysis.diagnose import analyze

    path = tmp_path / "nested.py"
    path.write_text(NESTED)
    ns = runpy.run_path(str(path), run_name="tfviz_truth")
    inner, w = ns["inner"], ns["w"]

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            h = w * 3.0
            y = inner(h)
            z = tf.cond(tf.reduce_sum(w) > 0.0, lambda: y * y, lambda: y * 3.0 - 1.0)
            value = tf.reduce_sum(z)
        return [tf.norm(g) for g in tape.gradient(value, [h, y, z])], tf.reduce_sum(w) > 0.0

    (dh, dy, dz), pred = step()
    assert bool(pred) is False  # the else branch runs: these values exercise the filter
    report = analyze(str(path))
    norms = {o.id: o.grad_norm for o in report.graph.ops if o.group}
    call = {k: v for k, v in norms.items() if "#call/" in k and v is not None}
    then = {k: v for k, v in norms.items() if "#then/" in k and v is not None}
    other = {k: v for k, v in norms.items() if "#else/" in k and v is not None}
    assert then == {}
    assert any(k.endswith("/h") for k in call), call
    np.testing.assert_allclose(next(v for k, v in call.items() if k.endswith("/h")), dh.numpy(), rtol=1e-5)
    np.testing.assert_allclose(
        next(v for k, v in call.items() if k.endswith("/Identity")), dy.numpy(), rtol=1e-5
    )
    # The Mul that the body's Identity result copies has that same gradient;
    # the Tanh before it is out of the tape's reach and carries none.
    np.testing.assert_allclose(call[next(k for k in call if k.endswith("/mul"))], dy.numpy(), rtol=1e-5)
    assert not any(k.endswith("/Tanh") for k in call)
    # The else branch ran: its argument y, its Sub and its result carry dL/dy and dL/dz.
    expected = {"Placeholder": dy.numpy(), "Sub": dz.numpy(), "Identity": dz.numpy()}
    types = {o.id: o.type for o in report.graph.ops}
    assert sorted(types[k] for k in other) == sorted(expected)
    for k, v in other.items():
        np.testing.assert_allclose(v, expected[types[k]], rtol=1e-5)


@pytest.mark.parametrize("value,kind", [(1, "then"), (0, "else"), (5, "branch2")])
def test_taken_kind(value, kind):
    from tfviz.engine.nestednorms import taken_kind

    kinds = ["then", "else"] if kind in ("then", "else") else ["branch0", "branch1", "branch2"]
    assert taken_kind(kinds, value) == kind


def test_zero_is_said_when_only_the_eager_verdict_exists(tmp_path):
    from tfviz.analysis.diagnose import analyze

    path = tmp_path / "untraceable.py"
    path.write_text(
        "import tensorflow as tf\n\n"
        "w = tf.Variable(-2.0, name='w')\n"
        "v = tf.Variable(1.0, name='v')\n\n\n"
        "def loss():\n"
        "    n = float(v.numpy())\n"
        "    return tf.nn.relu(w) * n + v\n"
    )
    grads = _eager_grads(str(path), ["w", "v"])
    assert float(grads["w"]) == 0.0 and float(grads["v"]) != 0.0
    report = analyze(str(path))
    assert report.traced  # tf.function cannot trace .numpy(): the eager run, copied, is drawn
    got = {v.name: (v.status, v.kind) for v in report.variables}
    assert got == {"w": ("connected", "zero"), "v": ("connected", None)}
    (p,) = [p for p in report.problems if p.kind == "zero"]
    assert p.variables == ["w"] and p.op_type == "Relu"  # the dead ReLU, named where it is


def test_zeros_inside_a_loop_name_the_branch_and_never_an_invented_join(analyze_example):
    name = "kind_zero_cond_in_loop.py"
    truth = tensorflow_truth(str(EXAMPLES / name), ["W_h", "W_aux", "W_gate"], zeros=True)
    assert truth["W_h"] == truth["W_aux"] == "zero"
    report = analyze_example(name)
    kinds = {v.name: v.kind for v in report.variables}
    assert kinds["W_h"] == kinds["W_aux"] == "zero"
    by_var = {p.variables[0]: p for p in report.problems if p.kind == "zero"}
    aux = by_var["W_aux"]
    assert aux.op_type == "If" and "then branch" in aux.message and "inside a loop" in aux.message
    assert aux.source is not None and "tf.cond" in aux.source.code
    # nothing in the loop body is measured: no op is blamed for W_h, and no "cancel" claimed
    h = by_var["W_h"]
    assert h.op == "" and "cannot tell" in h.message and "cancel" not in h.message


def test_predict_inside_a_loss_target_is_named_at_its_line(tmp_path):
    """A loss() that calls model.predict: eagerly TensorFlow gives every weight None (predict
    returned NumPy); the report names the call, as it does for a program's step."""
    import tensorflow as tf

    from tfviz.analysis.diagnose import analyze

    path = tmp_path / "predict_loss.py"
    path.write_text(
        "import numpy as np\nimport tensorflow as tf\nimport keras\n\n"
        "model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])\n"
        "x = np.ones((8, 3), 'float32')\n\n\n"
        "def loss():\n"
        "    return tf.reduce_mean(tf.square(model.predict(x, verbose=0) - 1.0))\n"
    )
    ns = runpy.run_path(str(path), run_name="tfviz_truth")
    with tf.GradientTape() as tape:
        value = ns["loss"]()
    assert tape.gradient(value, ns["model"].trainable_variables) == [None, None]
    report = analyze(str(path))
    assert [(v.status, v.kind) for v in report.variables] == [("disconnected", "not_read")] * 2
    assert all(
        f"the target calls model.predict() at {path.name}:10" in v.explanation for v in report.variables
    )
    (p,) = report.problems
    assert (p.kind, p.severity, p.source.line) == ("not_read", "error", 10)


@pytest.mark.parametrize(
    "values",
    [
        [[0.5, -1.25], [3.0, 1e-3]],
        [1e20, 1e20],  # its float32 square sum overflows; the gradient is finite, and so is its norm
        [1.0, float("nan")],
        [float("inf"), 2.0],
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_small_gradient_in_the_cpus_memory_is_measured_as_the_l2loss_op_measures_it(values, dtype):
    """NumPy's measure of a gradient is the L2Loss op's, in float64: not finite exactly where
    the gradient holds a NaN or an infinity (TensorFlow's ``is_finite``), for an overflow of
    the float32 sum is no NaN of the gradient."""
    import math

    import tensorflow as tf

    t = tf.constant(values, dtype)
    half = sq_norm_of(t)
    assert isinstance(half, float)  # read in NumPy, not by an op
    (norm,) = read_halves([half])
    (oracle,) = read_halves([tf.nn.l2_loss(tf.cast(t, tf.float64))])
    assert math.isfinite(norm) == bool(tf.reduce_all(tf.math.is_finite(t)))
    if math.isnan(oracle):
        assert math.isnan(norm)
    else:
        assert norm == pytest.approx(oracle, rel=1e-6)


@pytest.mark.parametrize("size", [SLICE_ON_CPU + 1, 200_704, 802_816, 3 * SLICE_ON_CPU])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_large_gradient_in_the_cpus_memory_is_measured_slice_by_slice_as_the_op_measures_it(size, dtype):
    """Larger than a slice, a gradient is summed slice by slice (the size of ResNet50's
    activations' gradients): its norm is the L2Loss op's, to 1e-5 (the precision tfviz's
    norms are held to against TensorFlow's), for values spread over twelve orders of magnitude
    and for one value repeated, the hardest case for a float32 sum; a float32 sum whose half
    is past float32's range is summed again in float64, as the op is asked to sum it, and
    stays finite: the gradient is."""
    import math

    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(size)
    t = tf.constant(np.exp(3 * rng.standard_normal(size)).astype(dtype))
    half = sq_norm_of(t)
    assert isinstance(half, float)  # read in NumPy, not by an op
    assert read_halves([half]) == pytest.approx(read_halves([tf.nn.l2_loss(t)]), rel=1e-5)
    if dtype == "float32" and size == 3 * SLICE_ON_CPU:
        # each slice's float32 sum finite, the whole one's half past float32's range; then a
        # slice's own sum past it; then within it: each as the op measures it in float64
        for value in (6.5e16, 1e19, 3.5e16):
            t = tf.fill([size], value)
            (mine,) = read_halves([sq_norm_of(t)])
            (op,) = read_halves([tf.nn.l2_loss(tf.cast(t, tf.float64))])
            assert math.isfinite(mine) and mine == pytest.approx(op, rel=1e-5)
        t = tf.tensor_scatter_nd_update(tf.fill([size], 1e19), [[5]], [math.inf])
        assert read_halves([sq_norm_of(t)]) == [math.inf]  # an infinity among them: not finite
