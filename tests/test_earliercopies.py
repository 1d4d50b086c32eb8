"""Copies of a variable made before an in-process check (:mod:`tfviz.analysis.earliercopies`):
named where the evidence holds, and only there. Each case's verdict is TensorFlow's (the
variable gets no gradient), and its cause is the one ``tfviz check`` gives the same file run
as a script, which records how every tensor was made."""

from __future__ import annotations

import runpy
import textwrap

import pytest

import tfviz

HEAD = "import numpy as np\nimport tensorflow as tf\n"


def _layer(initializer: str, copy: str) -> str:
    """A layer that keeps ``copy`` of its weight, made in ``build()``, built at once."""
    return (
        "class Held(tf.keras.layers.Layer):\n"
        "    def build(self, shape):\n"
        f"        self.w = self.add_weight(shape=(3,), initializer='{initializer}')\n"
        f"        self.w2 = {copy}\n"
        "    def call(self, x):\n"
        "        return x * self.w2\n"
        "layer = Held()\n"
        "layer(tf.ones([1, 3]))\n"
    )


CASES = {
    # the copy's values cannot tell (all ones), but the line that made it reads the variable
    "scaled": ("w = tf.Variable(tf.ones([3]))\nfrozen = w * 2.0\n", "frozen", "frozen_copy"),
    # a filled tensor that the variable's values match, made from nothing of the variable's
    "filled": ("w = tf.Variable(tf.ones([3]))\nfrozen = tf.fill([3], 1.0)\n", "frozen", "not_read"),
    # the copy was made from a variable the name held before: not the one checked
    "rebound": (
        "w = tf.Variable(tf.ones([3]))\nfrozen = w * 2.0\nw = tf.Variable(tf.ones([3]))\n",
        "frozen",
        "not_read",
    ),
    # a layer's copy whose values cannot tell (all ones): its line reads the layer's variable
    "layer_ones": (_layer("ones", "self.w * 2.0"), "layer.w2", "frozen_copy"),
    # a copy held by a layer: its values tell, and so does the line in the layer's class
    "layer": (_layer("random_normal", "self.w * 1.0"), "layer.w2", "frozen_copy"),
    # the variable's values typed out again: equal by chance, made of literals, no copy
    "typed_again": (
        "w = tf.Variable([1.0, 2.0, 3.0])\nfrozen = tf.constant([1.0, 2.0, 3.0])\n",
        "frozen",
        "not_read",
    ),
    # the same values made by NumPy and a builtin, not from the variable
    "numpy_literal": (
        "w = tf.Variable([0.0, 1.0, 2.0])\nfrozen = tf.constant(np.arange(3, dtype=np.float32) * float(1))\n",
        "frozen",
        "not_read",
    ),
    # the variable and the tensor both made from one list: the tensor is no copy of the variable
    "same_data": (
        "xs = [3.0, 1.0, 2.0]\nw = tf.Variable(xs)\nfrozen = tf.constant(xs)\n",
        "frozen",
        "not_read",
    ),
    # a layer's attribute typed out with its weight's values, in the layer's class
    "layer_typed_again": (
        _layer("random_normal", "tf.constant([1.0, 2.0, 3.0])").replace(
            "layer(tf.ones([1, 3]))\n", "layer(tf.ones([1, 3]))\nlayer.w.assign([1.0, 2.0, 3.0])\n"
        ),
        "layer.w2",
        "not_read",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_copy_made_before_the_check_is_named_only_on_evidence(case, tmp_path):
    body, used, kind = CASES[case]
    path = tmp_path / f"{case}.py"
    path.write_text(HEAD + body + f"\n\ndef loss():\n    return tf.reduce_sum({used} * 3.0)\n")
    names = runpy.run_path(str(path), run_name="notebook")
    import tensorflow as tf

    variable = names["w"] if "w" in names else names["layer"].w
    with tf.GradientTape() as tape:
        value = names["loss"]()
    assert tape.gradient(value, variable) is None  # TensorFlow: no gradient reaches it
    here = tfviz.check(names["loss"])
    script = tfviz.check(path)
    (row,) = here.variables
    assert (row.status, row.kind) == ("disconnected", kind)
    assert [(v.status, v.kind) for v in script.variables] == [(row.status, row.kind)]
    (problem,) = here.problems
    (said,) = script.problems
    assert (problem.kind, problem.source.line) == (said.kind, said.source.line)
    if kind == "frozen_copy":  # at the line that made the copy
        assert textwrap.dedent(body).splitlines()[problem.source.line - 3].strip() == problem.source.code
        assert problem.source.code.startswith(("frozen =", "self.w2 ="))
