"""The copy of an eager call holds its ops as data; a graph op is made only to probe a
gradient, and the probe of a copied op says what the probe of the traced op says."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from tfviz.engine.eagerstream import Stream  # noqa: E402
from tfviz.engine.gradrules import Prober  # noqa: E402

W = tf.Variable([[1.0, 2.0], [3.0, -4.0]], name="w")
IMAGE = tf.Variable(tf.random.stateless_uniform([1, 8, 8, 3], seed=[1, 2]), name="image")

PROGRAMS = {
    "dense": lambda: tf.reduce_sum(tf.tanh(tf.matmul(tf.ones([3, 2]), W)) ** 2),
    "no gradient (ResizeArea)": lambda: tf.reduce_mean(tf.raw_ops.ResizeArea(images=IMAGE, size=[4, 4])),
    "registered as returning none (Round)": lambda: tf.reduce_sum(tf.round(W * 3.0)),
    "stop_gradient": lambda: tf.reduce_sum(tf.stop_gradient(W) * W),
    "an integer cast": lambda: tf.reduce_sum(tf.cast(tf.cast(W, tf.int32), tf.float32)),
    "a static-shape SVD": lambda: tf.reduce_sum(tf.linalg.svd(W, compute_uv=False)),
    "a gather": lambda: tf.reduce_sum(tf.gather(W, [1, 1, 0])),
    "a concat and split": lambda: tf.reduce_sum(tf.split(tf.concat([W, W * 2.0], axis=1), 2, axis=1)[1]),
}


def _copied(fn):
    with Stream() as stream, tf.GradientTape():
        fn()
    assert stream.refused is None
    return stream.graph


def _verdicts(ops) -> dict[str, list[tuple[str, str]]]:
    prober = Prober()
    return {
        op.name: [(v.status, v.message) for v in prober.verdicts(op)]
        for op in ops
        if op.type not in ("Placeholder", "Const", "Identity", "NoOp", "ReadVariableOp")
        and any(t.dtype.name.startswith("float") for t in op.outputs)
    }


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_copied_op_is_probed_as_the_traced_op_is(name):
    fn = PROGRAMS[name]
    copied = _verdicts(_copied(fn).get_operations())
    traced = _verdicts(tf.function(fn, autograph=False).get_concrete_function().graph.get_operations())
    # eagerly the copy also holds what a trace folds into constants (tf.ones is a Fill)
    common = set(copied) & set(traced)
    assert len(common) >= 2 and set(traced) - {"ones"} <= common, name
    assert {k: copied[k] for k in common} == {k: traced[k] for k in common}, name


def test_the_copy_makes_no_graph_op_but_one_per_probed_signature():
    graph = _copied(lambda: tf.reduce_sum(tf.tanh(tf.tanh(tf.matmul(tf.ones([3, 2]), W)))))
    assert graph._probes is None  # the call itself made no graph op
    tanhs = [op for op in graph.get_operations() if op.type == "Tanh"]
    assert len(tanhs) == 2 and tanhs[0].probe_signature() == tanhs[1].probe_signature()
    prober = Prober()
    for op in tanhs:
        prober.verdicts(op)
    # the op and its input's placeholder; the gradient built of them is in the probe's scope
    made = [op.type for op in graph.probes().get_operations() if not op.name.startswith("tfviz_probe")]
    assert sorted(made) == ["Placeholder", "Tanh"] and prober.probes == 1


def test_the_copy_names_its_ops_as_tensorflow_names_a_traces():
    """Names asked for again, in another case, or as another's numbered name (``a_1`` before
    the second ``a``) come out as TensorFlow's own ``Graph.unique_name`` makes them."""
    import random

    from tfviz.engine.copiedgraph import CopiedGraph

    rng = random.Random(0)
    stems = [
        "a",
        "A",
        "a_1",
        "a_2",
        "dense/MatMul",
        "dense/matmul",
        "Dense/MatMul_1",
        "x_0",
        "x",
        "b_1_1",
        "b_1",
        "b",
    ]
    for _ in range(20):
        ours, theirs = CopiedGraph("copy"), tf.Graph()
        for _ in range(60):
            name = rng.choice(stems)
            assert ours.unique_name(name) == theirs.unique_name(name), name
