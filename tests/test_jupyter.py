"""``%load_ext tfviz`` in a real Jupyter kernel: nbclient runs a notebook in ipykernel (both in
the test extra), and the cells' outputs are what a user sees: the report's HTML holding the
graph's SVG and the variable's name, the command's message for a target that is not there."""

from __future__ import annotations

import json

import pytest

from tests.conftest import EXAMPLES

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

MODEL = """\
import tensorflow as tf
tf.keras.utils.set_random_seed(0)
teacher = tf.Variable(tf.ones([3]), name="teacher")
student = tf.keras.layers.Dense(1)
x = tf.random.normal([4, 3])
student(x)

def loss():
    return tf.reduce_mean(student(x) * tf.reduce_sum(tf.stop_gradient(teacher)))

optimizer = tf.keras.optimizers.SGD(0.1)

def train_step(batch):
    with tf.GradientTape() as tape:
        value = tf.reduce_mean(tf.cast(tf.argmax(student(batch), 1), tf.float32))
    grads = tape.gradient(value, student.trainable_variables)
    optimizer.apply_gradients([(g, v) for g, v in zip(grads, student.trainable_variables) if g is not None])
"""


def _run(cells: list[str], tmp_path) -> list:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    client = nbclient.NotebookClient(nb, timeout=600, resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return [c.outputs for c in nb.cells]


def _html(outputs: list) -> str:
    return "".join(
        o.get("data", {}).get("text/html", "") for o in outputs if o.output_type == "execute_result"
    )


def _stderr(outputs: list) -> str:
    return "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stderr")


def test_the_magic_checks_live_objects_and_files(tmp_path):
    pytest.importorskip("PySide6")
    outputs = _run(
        [
            MODEL + "before = student.kernel.numpy().copy()",
            "%load_ext tfviz",
            "%tfviz check",
            f"%tfviz check {EXAMPLES / 'kind_stop_gradient.py'}",
            "%tfviz check no_such_loss",
            "bool((student.kernel.numpy() == before).all())",
            "%tfviz check train_step x",
            f"%tfviz check {EXAMPLES / 'kind_stop_gradient.py'} --lr 0.1",
        ],
        tmp_path,
    )
    live = _html(outputs[2])
    assert "<svg" in live and "teacher" in live and "stop_gradient" in live
    assert "student" in live  # the live layer's variables, by the notebook's names
    from_file = _html(outputs[3])
    assert "<svg" in from_file and "kind_stop_gradient.py:10" in from_file
    assert "the notebook has no 'no_such_loss'" in _stderr(outputs[4])
    assert not [o for o in outputs[4] if o.output_type == "error"]  # a message, not a traceback
    assert outputs[5][0]["data"]["text/plain"] == "True"  # the notebook's model as it was
    step = _html(outputs[6])  # the step, its argument from the notebook: argmax cuts the path
    assert "integer" in step and "student.kernel" in step  # TensorFlow: None for both, at the argmax
    # the script's own option, given as to python: one line that says where it goes
    said = _stderr(outputs[7])
    assert not [o for o in outputs[7] if o.output_type == "error"]
    assert "unrecognized arguments: --lr 0.1; a script's arguments go after --:" in said
    assert said.count("usage:") == 1 and "tfviz: 2" not in said


def test_until_draws_a_live_chart_that_ends_at_the_step_that_fired(tmp_path):
    """``tfviz.check(path, until="nan")`` in a notebook: a chart of each layer's gradient norm,
    redrawn in place as the steps come (nbclient applies the display updates), ending at the
    step where the NaN fired; the program's own output below it; the report as the result."""
    program = EXAMPLES / "train_nan_log.py"
    outputs = _run(
        [
            "import tfviz",
            f"report = tfviz.check({str(program)!r}, until='nan')\nreport.watch.fired, report.watch.step",
        ],
        tmp_path,
    )
    charts = [
        o["data"]["text/html"]
        for o in outputs[1]
        if o.output_type == "display_data" and "tfviz-live" in o.get("data", {}).get("text/html", "")
    ]
    assert len(charts) == 1  # one chart, updated in place
    chart = charts[0]
    assert "nan at step 9" in chart and "9 steps" in chart
    assert chart.count("<polyline") == 2  # w and b
    result = [o for o in outputs[1] if o.output_type == "execute_result"]
    assert result and result[0]["data"]["text/plain"] == "('nan', 9)"


def test_copies_made_in_earlier_cells_are_named_at_the_cells_that_made_them(tmp_path):
    """A layer that keeps a transposed copy of its weight, built in one cell, and a copy of a
    variable made in another: ``tfviz.check(loss)`` in a third names both copies at the lines
    that made them, though nothing recorded their making, each line by its cell as IPython
    names it. TensorFlow gives both variables no
    gradient, and each copy holds exactly its variable's values."""
    outputs = _run(
        [
            "import json\n"
            "import numpy as np\n"
            "import tensorflow as tf\n"
            "class Scaled(tf.keras.layers.Layer):\n"
            "    def build(self, shape):\n"
            "        w = self.add_weight(shape=(shape[-1], 2), initializer='random_normal')\n"
            "        self.w2 = tf.transpose(w)\n"
            "\n"
            "    def call(self, x):\n"
            "        return x @ tf.transpose(self.w2)\n"
            "layer = Scaled()\n"
            "x = tf.random.normal([4, 3])\n"
            "layer(x)",
            "v = tf.Variable(tf.random.normal([3, 2]), name='v')\nv_copy = v * 1.0",
            "import tfviz\n"
            "def loss():\n"
            "    return tf.reduce_sum(layer(x)) + tf.reduce_sum(x @ v_copy)\n"
            "report = tfviz.check(loss)\n"
            "with tf.GradientTape() as tape:\n"
            "    value = loss()\n"
            "truth = [g is None for g in tape.gradient(value, [layer.trainable_variables[0], v])]\n"
            "same = [np.array_equal(layer.w2, tf.transpose(layer.trainable_variables[0])),"
            " np.array_equal(v_copy, v)]\n"
            "problems = sorted([p.kind, p.source.code, p.source.label()] for p in report.problems)\n"
            "print(report)\n"
            "print(json.dumps([truth, same, problems, [v.explanation for v in report.variables]]))\n"
            "report",
        ],
        tmp_path,
    )
    printed = "".join(o.text for o in outputs[2] if o.output_type == "stream" and o.name == "stdout")
    truth, same, problems, explained = json.loads(printed.strip().splitlines()[-1])
    assert truth == [True, True] and same == [True, True]
    # each at its cell, as IPython's own tracebacks name it
    assert problems == [
        ["frozen_copy", "self.w2 = tf.transpose(w)", "Cell In[1], line 7"],
        ["frozen_copy", "v_copy = v * 1.0", "Cell In[2], line 2"],
    ]
    assert "layer.w2 (made at Cell In[1], line 7)" in explained[0]
    html = _html(outputs[2])
    assert "Cell In[2], line 2" in html and "ipykernel" not in html
    text = printed.strip().splitlines()
    assert text[0].startswith("Cell In[3]  target: loss") and not [ln for ln in text if "ipykernel" in ln]
