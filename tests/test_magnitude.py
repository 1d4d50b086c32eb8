"""Vanishing and exploding gradients, checked against TensorFlow's own gradients.

Cancelled variables (rounding noise next to a layer-mate's gradient) are checked the same way,
layer by layer. The oracle differentiates each example with ``tape.gradient`` inside ``tf.function``, here and
without tfviz, measures each variable's gradient per element, and takes the output layer's
bias (the gradient the loss hands back, before any layer changes it) as the scale the rest is
compared with. Whatever sits clearly past the rule's
distance from them (by more than :data:`MARGIN`) must be flagged, and whatever sits clearly
inside must not be. The band between is where the two choices of reference (tfviz's nearest
tenth, the oracle's output layer) may disagree.
"""

from __future__ import annotations

import math
import os
import re
import runpy
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, saved_and_opened
from tfviz.engine.magnitude import CANCELLED_BELOW, CANCELLED_GAP, DECADES

MARGIN = 0.75
TFVIZ = Path(sys.executable).with_name("tfviz")


def tensorflow_sizes(path: Path) -> tuple[dict[str, float], dict[str, list[str]]]:
    """Gradient per element of each trainable variable (by Keras path), and each one's
    reference variables: the output layer's kernel for a kernel, its bias for the rest (or its
    variables, where it has none of that kind)."""
    import tensorflow as tf

    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        ns = runpy.run_path(str(path), run_name="tfviz_truth")
    finally:
        os.chdir(cwd)
    model, loss = ns["model"], ns["loss"]
    loss()
    variables = list(model.trainable_variables)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            value = loss()
        return tape.gradient(value, variables)

    sizes = {}
    for v, g in zip(variables, step()):
        n = math.prod(v.shape)
        sizes[_in_model(v.path)] = float(tf.norm(g)) / math.sqrt(n)
    last = model.layers[-1].trainable_variables
    bias = [v for v in last if v.path.endswith("/bias")]  # its gradient is the loss's own signal
    kernel = [v for v in last if len(v.shape) >= 2]
    # like with like: kernels against the output layer's kernel, the rest against its bias
    return sizes, {
        _in_model(v.path): [_in_model(w.path) for w in (kernel if len(v.shape) >= 2 else bias) or last]
        for v in variables
    }


def _in_model(path: str) -> str:
    """``dense/kernel`` of ``sequential_3/dense/kernel``: the model's own name is numbered per
    process (this one builds the example a second time)."""
    return path.split(":")[0].split("/", 1)[-1]


def _by_tf_name(report) -> dict[str, object]:
    return {_in_model(v.tf_name): v for v in report.variables}


def expected_verdicts(truth: dict[str, float], reference: dict[str, list[str]]) -> dict[str, str | None]:
    """What the documented rule says of TensorFlow's own sizes; variables in the margin band
    around a threshold are left out (``...``): either answer is right there."""
    layers: dict[str, list[str]] = {}
    for path in truth:
        layers.setdefault(path.rsplit("/", 1)[0], []).append(path)
    out: dict[str, str | None] = {}
    for path, size in truth.items():
        x = math.log10(size)
        ref = math.log10(statistics.median(truth[p] for p in reference[path]))
        top = max(math.log10(truth[p]) for p in layers[path.rsplit("/", 1)[0]])
        gap, below = top - x, ref - x
        if gap >= CANCELLED_GAP + MARGIN and below >= CANCELLED_BELOW + MARGIN:
            out[path] = "cancelled"
        elif gap > CANCELLED_GAP - MARGIN and below > CANCELLED_BELOW - MARGIN:
            continue
        elif abs(x - ref) > DECADES + MARGIN:
            out[path] = "vanishing" if x < ref else "exploding"
        elif abs(x - ref) < DECADES - MARGIN:
            out[path] = None
    return out


@pytest.mark.parametrize(
    "example, expected",
    [
        ("kind_vanishing.py", {"vanishing"}),
        ("kind_exploding.py", {"exploding"}),
        ("kind_cancelled_bias_before_norm.py", {"cancelled"}),
        ("healthy_batchnorm.py", set()),
        ("unet_healthy.py", set()),
    ],
)
def test_the_flagged_variables_are_those_tensorflow_finds_out_of_scale(analyze_example, example, expected):
    report = analyze_example(example)
    truth, reference = tensorflow_sizes(EXAMPLES / example)
    rows = _by_tf_name(report)
    assert set(truth) == set(rows)
    for path, size in truth.items():
        v = rows[path]
        shown = v.grad_norm / math.sqrt(math.prod(v.shape))
        # the rule measures what TensorFlow gives. A gradient of rounding noise, as a bias before a
        # normalization gets, is the sum's rounding error: oneDNN sums in an order that varies
        # between two runs of the same step, so only its scale is TensorFlow's (within 0.3 decades)
        noise = max(
            truth[p] for p in truth if p.rsplit("/", 1)[0] == path.rsplit("/", 1)[0]
        ) / size >= 10 ** (CANCELLED_GAP - MARGIN)
        if noise:
            assert abs(math.log10(shown / size)) < 0.3
        else:
            assert shown == pytest.approx(size, rel=1e-2)
    want = expected_verdicts(truth, reference)
    assert {p: rows[p].magnitude for p in want} == want
    flagged = {path: v.magnitude for path, v in rows.items() if v.magnitude}
    assert set(flagged.values()) == expected
    for path in flagged:
        v = rows[path]
        assert v.status == "connected" and v.kind is None  # the gradient does arrive
        assert "decades" in v.explanation
    assert report.ok  # a warning or a note: never a failing verdict
    problems = {p.kind: p for p in report.problems if p.kind in ("vanishing", "exploding", "cancelled")}
    assert set(problems) == expected
    for kind, p in problems.items():
        assert p.severity == ("info" if kind == "cancelled" else "warning")
        assert sorted(p.variables) == sorted(rows[path].name for path, k in flagged.items() if k == kind)
        marked = {o.id[4:] for o in report.graph.ops if o.status == kind}
        # the graph's variable boxes carry a warning; a cancelled variable's box stays as it was
        assert marked == (set() if kind == "cancelled" else set(p.variables))
    saved_and_opened(report)  # the boxes' warnings are saved and open again


def test_check_prints_the_warning_and_exits_0(tmp_path):
    if not TFVIZ.exists():
        pytest.skip("the tfviz command is not installed")
    done = subprocess.run(
        [str(TFVIZ), "check", str(EXAMPLES / "kind_vanishing.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert re.search(r"-> gradients flow, \d+ vanishing$", first), first
    assert "warning vanishing" in done.stdout and "sigmoid" in done.stdout


def test_weight_norms_read_at_once_are_tensorflows_and_none_where_there_is_none():
    import tensorflow as tf

    from tfviz.engine.trace import value_norms

    kernel = tf.Variable(tf.random.stateless_normal([5, 3], seed=[3, 4]))
    big = tf.Variable(tf.constant([1e20, 1e20], tf.float64))
    broken = tf.Variable([1.0, float("nan")])
    counter = tf.Variable(3)
    got = value_norms([kernel, counter, broken, big, tf.Variable(tf.zeros([2]))])
    assert got[0] == pytest.approx(float(tf.norm(kernel)), rel=1e-6)
    assert got[1] is None and got[2] is None  # an integer, a NaN
    assert got[3] == pytest.approx(math.sqrt(2) * 1e20, rel=1e-9)  # float64 kept as float64
    assert got[4] == 0.0
    assert value_norms([]) == []


def test_an_exploding_stack_is_named_where_its_growth_starts(analyze_example):
    """Compared like with like, the deep linear stack's kernels are alike and its biases grow:
    the problem names the first bias past the threshold from the loss back (the row selects
    it: it is the problem's first variable) and the largest, the input layer's."""
    report = analyze_example("kind_exploding.py")
    (p,) = [p for p in report.problems if p.kind == "exploding"]
    flagged = [v for v in report.variables if v.magnitude == "exploding"]
    assert flagged and all(v.shape and len(v.shape) == 1 for v in flagged)  # biases only
    assert p.variables[0] == "stack[5].bias" and "past that at stack[5].bias" in p.message
    assert "furthest at stack[0].bias" in p.message
