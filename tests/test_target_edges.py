"""Targets that do something unusual get a clear verdict, not an internal error."""

from __future__ import annotations

import pytest

from tests.conftest import tensorflow_truth


def test_a_variable_created_on_each_call_is_named_with_its_line(tmp_path):
    from tfviz.analysis.diagnose import analyze
    from tfviz.errors import AnalysisError

    script = tmp_path / "fresh.py"
    script.write_text(
        "import tensorflow as tf\n\n\ndef loss():\n    w = tf.Variable(2.0, name='w')\n    return w * w\n"
    )
    with pytest.raises(AnalysisError) as err:
        analyze(str(script))
    assert "creates tf.Variable 'w' on each call" in err.value.message
    assert err.value.line == 5


def test_a_target_returning_a_variable_is_read_as_its_value(tmp_path):
    from tfviz.analysis.diagnose import analyze

    script = tmp_path / "var.py"
    script.write_text(
        "import tensorflow as tf\n\nw = tf.Variable(2.0)\nu = tf.Variable(1.0)\n\n\n"
        "def loss():\n    return w\n"
    )
    report = analyze(str(script))
    got = {v.name: v.status for v in report.variables}
    assert got == tensorflow_truth(str(script), sorted(got))
    assert got == {"w": "connected", "u": "disconnected"}


def test_discovery_does_not_walk_large_plain_data():
    import types

    import tensorflow as tf

    from tfviz.script.discover import find_variables, iter_objects

    module = types.ModuleType("big")
    module.samples = [float(i) for i in range(200_000)]
    module.table = {i: float(i) for i in range(50_000)}
    module.w = tf.Variable(1.0)
    module.layers = [[tf.Variable(2.0)]]
    visited = sum(1 for _ in iter_objects(module))
    assert visited < 20
    assert sorted(f.path for f in find_variables(module)) == ["layers[0][0]", "w"]


def test_tf1_session_program_is_refused_at_its_gradient_line(tmp_path):
    from tfviz.analysis.diagnose import analyze
    from tfviz.errors import AnalysisError

    script = tmp_path / "tf1_session.py"
    script.write_text(
        "import tensorflow as tf\n\n"
        "with tf.Graph().as_default():\n"
        "    w = tf.compat.v1.get_variable('w', initializer=1.0)\n"
        "    loss = w * w\n"
        "    grads = tf.compat.v1.gradients(loss, [w])\n"
        "    with tf.compat.v1.Session() as sess:\n"
        "        sess.run(tf.compat.v1.global_variables_initializer())\n"
        "        print(sess.run(grads))\n"
    )
    with pytest.raises(AnalysisError) as err:
        analyze(str(script))
    assert "graph mode" in err.value.message and err.value.line == 6
