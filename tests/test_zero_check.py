"""The trace's "exactly zero" check agrees with TensorFlow's own count of non-zero elements,
and costs two ops per variable in the traced graph."""

from __future__ import annotations

import math
import sys

import pytest

tf = pytest.importorskip("tensorflow")

from tfviz.engine.trace import any_nonzero, nonzero_flags, read_norms  # noqa: E402

SHAPE = tf.constant([4, 1])
CASES = {
    "zeros": tf.zeros([3, 4]),
    "negative zero": tf.constant([-0.0, 0.0]),
    "one non-zero": tf.constant([[0.0, 0.0], [0.0, 1e-30]]),
    "nan": tf.constant([0.0, math.nan]),
    "scalar": tf.constant(0.0),
    "float64": tf.constant([0.0, 2.0], tf.float64),
    "rows that cancel": tf.IndexedSlices(tf.constant([[1.0], [-1.0]]), tf.constant([2, 2]), SHAPE),
    "rows that do not": tf.IndexedSlices(tf.constant([[1.0], [1.0]]), tf.constant([2, 3]), SHAPE),
}


def _truth(g) -> bool:
    """TensorFlow's answer: the gradient as the optimizer would add it has no non-zero element."""
    dense = tf.convert_to_tensor(g)
    return int(tf.math.count_nonzero(dense)) == 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_zero_check_agrees_with_count_nonzero(name):
    # as the eager verdict reads it: from the norm, and element by element where that is 0
    g = CASES[name]
    assert nonzero_flags([g], read_norms([g])) == [not _truth(g)]


def _traced(gradients: list) -> tuple[list[bool], int]:
    """The checks of ``gradients`` in one traced graph: their answers, and the ops they made."""
    made = {}

    @tf.function(autograph=False)
    def checks():
        graph = tf.compat.v1.get_default_graph()
        inputs = [tf.identity(g) for g in gradients]
        before = len(graph.get_operations())
        shared: dict = {}
        out = [any_nonzero(g, shared) for g in inputs]
        made["ops"] = len(graph.get_operations()) - before
        return tf.logical_not(tf.stack(out))

    return checks().numpy().tolist(), made["ops"]


def test_traced_zero_checks_agree_with_count_nonzero():
    names = [n for n in sorted(CASES) if not isinstance(CASES[n], tf.IndexedSlices)]
    got, _ = _traced([CASES[n] for n in names])
    assert got == [_truth(CASES[n]) for n in names]


def test_each_traced_zero_check_costs_two_ops():
    """A model's trace makes one check per variable: constants are shared, so ten more
    variables of a dtype and rank already seen cost twenty ops (count_nonzero made six per
    variable, through Python wrappers that cost more than the model's own trace)."""
    g = tf.ones([3, 4])
    _, ten = _traced([g] * 10)
    _, twenty = _traced([g] * 20)
    assert twenty - ten == 20


TINY = """
import tensorflow as tf

tiny = tf.Variable([1.0, 2.0], name="tiny")
dead = tf.Variable([1.0, 2.0], name="dead")
tiny64 = tf.Variable([1.0, 2.0], dtype=tf.float64, name="tiny64")
dead64 = tf.Variable([1.0, 2.0], dtype=tf.float64, name="dead64")
calls = []


def loss():
    calls.append(tf.executing_eagerly())
    wide = tf.reduce_sum(tiny64 * 1e-200) + tf.reduce_sum(tf.nn.relu(dead64 - 10.0))
    return (tf.reduce_sum(tiny * 1e-30) + tf.reduce_sum(tf.nn.relu(dead - 10.0))
            + tf.cast(wide, tf.float32))
"""


def test_a_traced_zero_is_told_from_a_gradient_whose_square_underflows(tmp_path):
    """float32 gradients of 1e-30 square to 0 in float32 and float64 ones of 1e-200 in float64,
    so their norms are 0; neither is a zero gradient, as TensorFlow's own count of non-zero
    elements says. The dead ReLUs' gradients are."""
    from tests.conftest import tensorflow_truth
    from tfviz.analysis.diagnose import analyze

    path = tmp_path / "tiny.py"
    path.write_text(TINY)
    names = ["tiny", "dead", "tiny64", "dead64"]
    truth = tensorflow_truth(str(path), names, zeros=True)
    assert truth == {"tiny": "connected", "dead": "zero", "tiny64": "connected", "dead64": "zero"}
    report = analyze(str(path))
    # one eager call, the one the analysis copies: telling the zeros apart needs no other
    assert sys.modules["tfviz_user_script"].calls.count(True) == 1
    got = {v.name: v for v in report.variables}
    for name in names:
        assert (got[name].kind == "zero") == (truth[name] == "zero"), name
    # the norms say 0 for all four: only the element-wise check tells them apart
    assert all(got[name].grad_norm == 0.0 for name in names)
