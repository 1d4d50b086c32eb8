"""The Python API, as a notebook or a test suite uses it: ``tfviz.check`` on a path (the
command's report, in a worker) and on a live function (in the caller's process, leaving it as
it was), the :class:`tfviz.Report` it returns, its errors, and ``tfviz.testing``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tfviz
import tfviz.testing
from tests.conftest import EXAMPLES, ROOT, check_json, line_of
from tfviz.exitstatus import ExitStatus

TFVIZ = str(Path(sys.executable).with_name("tfviz"))
STOP = EXAMPLES / "kind_stop_gradient.py"
UNTOUCHED = ROOT / "tests" / "programs" / "api" / "untouched.py"


def test_import_tfviz_stays_light():
    """``import tfviz`` imports neither TensorFlow nor the API's modules until they are used."""
    code = "import sys, tfviz; print('tensorflow' in sys.modules, 'tfviz.api' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_import_tfviz_after_tensorflow_loads_what_a_check_imports():
    """Where TensorFlow is imported first (a notebook, a test), ``import tfviz`` loads the
    in-process analysis, so that the session's first check imports nothing of tfviz's or
    networkx's (its 0.15 s was a tenth of a ResNet50 check), and leaves the collector as it was."""
    code = (
        "import gc, sys, json\n"
        "import numpy as np, tensorflow as tf\n"
        "import tfviz\n"
        "loaded = ['networkx' in sys.modules, 'tfviz.analysis.diagnose' in sys.modules, gc.isenabled()]\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(4), tf.keras.layers.BatchNormalization(),"
        " tf.keras.layers.Dense(1)])\n"
        "x = np.arange(6, dtype=np.float32).reshape(3, 2)\n"
        "def loss():\n"
        "    return tf.reduce_mean(model(x, training=True))\n"
        "loss()\n"
        "before = set(sys.modules)\n"
        "report = tfviz.check(loss)\n"
        "new = sorted(m for m in set(sys.modules) - before if m.startswith(('tfviz', 'networkx')))\n"
        "print(json.dumps([loaded, new, len(report.variables)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == [[True, True, True], [], 6]


def test_a_path_gives_the_commands_report(tmp_path):
    report = tfviz.check(STOP)
    assert isinstance(report, tfviz.Report)
    assert report.ok is False and report.status == ExitStatus.PROBLEMS == 1
    doc = json.loads(
        subprocess.run([TFVIZ, "check", str(STOP), "--json"], capture_output=True, text=True).stdout
    )
    assert [(v.name, v.status, v.kind) for v in report.variables] == [
        (v["name"], v["status"], v["kind"]) for v in doc["variables"]
    ]
    (problem,) = report.problems
    assert problem.kind == "stop_gradient"
    assert (problem.source.file, problem.source.line) == (
        str(STOP),
        line_of(STOP, "tf.stop_gradient(teacher"),
    )
    assert json.loads(report.to_json())["problems"][0]["kind"] == "stop_gradient"
    text = subprocess.run([TFVIZ, "check", str(STOP)], capture_output=True, text=True, cwd=Path.cwd()).stdout
    assert str(report).strip() == text.strip()


def test_bad_input_raises_what_the_command_says(tmp_path):
    missing = tmp_path / "missing.ipynb"
    with pytest.raises(tfviz.AnalysisError) as err:
        tfviz.check(missing)
    said = subprocess.run([TFVIZ, "check", str(missing)], capture_output=True, text=True).stderr
    assert said.strip() == f"tfviz: {err.value}"
    with pytest.raises(TypeError, match="a path to a script or notebook, or a function"):
        tfviz.check(3.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="until is for a script"):
        tfviz.check(lambda: 0.0, until="nan")


def test_a_model_handed_over_for_its_loss_says_how_to_check_it():
    """``tfviz.check(model)``, or its forward pass with ``args``: a model is no loss; a
    callable object whose call is a training step (a ``tf.Module``'s) is checked as one, and
    TensorFlow's gradients for its variables are no None."""
    import numpy as np
    import tensorflow as tf

    x = np.ones((3, 4), "float32")
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
    for args in (None, (x,)):
        with pytest.raises(tfviz.AnalysisError, match="is a model, not a loss: pass a function that"):
            tfviz.check(model, args=args)

    class Trainer(tf.Module):
        def __init__(self) -> None:
            self.dense = tf.keras.layers.Dense(2)
            self.opt = tf.keras.optimizers.SGD(0.1)

        def __call__(self, x: tf.Tensor) -> None:
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(self.dense(x) ** 2)
            grads = tape.gradient(loss, self.dense.trainable_variables)
            assert all(g is not None for g in grads)  # TensorFlow's own answer
            self.opt.apply_gradients(zip(grads, self.dense.trainable_variables))

    trainer = Trainer()
    trainer(x)  # built, and TensorFlow's gradients checked
    report = tfviz.check(trainer, args=(x,))
    assert report.ok and len(report.variables) == 2


def test_a_live_function_is_checked_in_process_and_leaves_nothing_behind():
    """In a fresh process: a model built and trained, ``tfviz.check(loss)`` twice, then more
    training. Nothing tfviz patched or moved is left (every module's attributes, the op
    callbacks, the streams, folders, random state, variables), both reports agree with
    TensorFlow's own gradients, and the training afterwards ends with the same weights as a
    run that never called tfviz."""
    runs = [
        subprocess.run(
            [sys.executable, str(UNTOUCHED), *mode], capture_output=True, text=True, timeout=600, cwd=ROOT
        )
        for mode in ((), ("control",))
    ]
    for r in runs:
        assert r.returncode == 0, r.stderr[-3000:]
    checked, control = (json.loads(r.stdout) for r in runs)
    assert checked["changed"] == [] and checked["differs"] == []
    assert checked["verdicts"][0] == checked["verdicts"][1]
    verdicts = checked["verdicts"][0]
    # the training step, called with its arguments and stopped before its update: it trains
    # the model's variables; the frozen one is not in its list, so not among its sources
    step = checked["verdicts"][2]
    assert step == {k: v for k, v in verdicts.items() if k != "frozen"}
    truth = checked["truth"]
    assert sorted(s == "connected" for s, _ in verdicts.values()) == sorted(truth.values())
    assert verdicts["frozen"] == ["disconnected", "stop_gradient"] and truth["frozen"] is False
    program_line = line_of(UNTOUCHED, "tf.stop_gradient(frozen)")
    assert checked["problems"][:2] == [[["stop_gradient", program_line]]] * 2
    assert checked["status"] == [1, 1, 0]
    assert checked["trained"] == control["trained"]


def test_a_function_that_raises_names_its_line_and_leaves_tensorflow_as_it_was():
    import tensorflow as tf
    from tensorflow.python.eager import backprop

    w = tf.Variable(2.0)

    def broken():
        return w * undefined_name  # noqa: F821 - the error is the point

    before = dict(vars(backprop.GradientTape))
    with pytest.raises(tfviz.AnalysisError) as err:
        tfviz.check(broken)
    assert "undefined_name" in str(err.value) and err.value.line == line_of(
        Path(__file__), "undefined_name  #"
    )
    assert dict(vars(backprop.GradientTape)) == before

    def fine():
        return w * 3.0

    report = tfviz.check(fine)
    assert report.ok and [(v.status, v.grad_norm) for v in report.variables] == [("connected", 3.0)]


def test_a_step_function_that_raises_says_where_and_what():
    import tensorflow as tf

    w = tf.Variable(1.0)

    def step(x):
        with tf.GradientTape():
            return w * x * missing_name  # noqa: F821 - the error is the point

    with pytest.raises(tfviz.AnalysisError) as err:
        tfviz.check(step, args=(2.0,))
    assert "step raised before its first gradient computation" in str(err.value)
    assert "missing_name" in str(err.value) and err.value.line == line_of(Path(__file__), "missing_name  #")


def test_the_report_shows_itself_in_a_notebook():
    pytest.importorskip("PySide6")
    html = tfviz.check(STOP)._repr_html_()
    assert "<svg" in html and "teacher" in html and "stop_gradient" in html
    assert "kind_stop_gradient.py:10" in html
    assert "background:#ffffff" in html  # its own light card: readable on a dark theme too


def test_assert_gradients_flow_lists_variable_kind_and_line():
    with pytest.raises(AssertionError) as err:
        tfviz.testing.assert_gradients_flow(STOP)
    message = str(err.value)
    assert f"teacher: stop_gradient at {STOP}:{line_of(STOP, 'tf.stop_gradient(teacher')}" in message
    report = tfviz.testing.assert_gradients_flow(STOP, allow=["teacher"])
    assert report.variables[0].name == "teacher"
    with pytest.raises(AssertionError, match="allow names techer, which the report does not have"):
        tfviz.testing.assert_gradients_flow(STOP, allow=["techer"])


@pytest.mark.parametrize("trained_first", [False, True], ids=["fresh", "trained_with_first"])
def test_a_tf_function_step_is_stopped_before_its_update(trained_first):
    """A compiled training step, called once with its batch: checked at its gradient call,
    never applied (the optimizer's count and every weight stay), its verdicts TensorFlow's.
    Also a step the session has trained with already, whose graph is traced (a call runs none
    of its Python): it was said to return "without computing a gradient", its update applied."""
    import tensorflow as tf

    tf.keras.utils.set_random_seed(1)
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(4), tf.keras.layers.Dense(1)])
    head = tf.Variable(tf.ones([1]), name="head")
    optimizer = tf.keras.optimizers.SGD(0.1)
    x, y = tf.random.normal([8, 3]), tf.random.normal([8, 1])
    optimizer.build(model.trainable_variables + [head])

    @tf.function
    def step(inputs, targets):
        with tf.GradientTape() as tape:
            out = tf.cast(tf.cast(model(inputs), tf.int32), tf.float32) * head  # the model's path is cut
            value = tf.reduce_mean((out - targets) ** 2)
        variables = model.trainable_variables + [head]
        grads = tape.gradient(value, variables)
        optimizer.apply_gradients([(g, v) for g, v in zip(grads, variables) if g is not None])
        return value

    if trained_first:
        step(x, y)
    before = [v.numpy().copy() for v in model.variables + [head]]
    report = tfviz.check(step, args=(x, y))
    assert [v.numpy().tolist() for v in model.variables + [head]] == [b.tolist() for b in before]
    assert int(optimizer.iterations.numpy()) == int(trained_first)
    with tf.GradientTape() as tape:  # TensorFlow's own answer
        out = tf.cast(tf.cast(model(x), tf.int32), tf.float32) * head
        value = tf.reduce_mean((out - y) ** 2)
    grads = tape.gradient(value, model.trainable_variables + [head])
    truth = [g is not None for g in grads]
    assert [v.status == "connected" for v in report.variables] == truth == [False] * 4 + [True]
    head_is_zero = not bool(tf.reduce_any(grads[-1] != 0))  # int-cast outputs of 0 give 0
    assert {p.kind for p in report.problems} == {"integer", *(["zero"] if head_is_zero else [])}
    assert (report.variables[-1].kind == "zero") == head_is_zero


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "tf_function"])
def test_a_copy_made_before_the_check_is_named_at_the_line_that_made_it(compiled):
    """The second seed report as a notebook meets it: the layer that reshapes its weight in
    ``build()`` was built in an earlier cell, so nothing recorded how its copy was made. The
    step checked with its batch still names the copy, found by its values, at the ``build()``
    line that made it, as ``tfviz check`` on the script does; TensorFlow gives the weight no
    gradient, and the copy holds exactly its values."""
    import runpy

    import numpy as np
    import tensorflow as tf

    seed2 = EXAMPLES / "seed2_frozen_copy.py"
    names = runpy.run_path(str(seed2), run_name="notebook")
    model, x, y = names["model"], names["x_train"], names["y_train"]
    model(x[:1])  # built before the check
    optimizer = tf.keras.optimizers.Adam()

    def step(inputs, targets):
        with tf.GradientTape() as tape:
            value = tf.reduce_mean(tf.keras.losses.categorical_crossentropy(targets, model(inputs)))
        grads = tape.gradient(value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return value

    report = tfviz.check(tf.function(step) if compiled else step, args=(x, y))
    layer = model.layers[0]
    with tf.GradientTape() as tape:  # TensorFlow's own answer
        value = tf.reduce_mean(tf.keras.losses.categorical_crossentropy(y, model(x)))
    grads = tape.gradient(value, model.trainable_variables)
    assert [g is None for g in grads] == [True, False, False]
    assert np.array_equal(layer.weights2.numpy(), tf.reshape(layer.trainable_variables[0], [784, 10]).numpy())
    cut = next(v for v in report.variables if v.status == "disconnected")
    assert cut.kind == "frozen_copy" and "model.layers[0].weights2" in cut.explanation
    (problem,) = report.problems
    made = line_of(seed2, "self.weights2 = tf.reshape(weights")
    assert (problem.kind, problem.source.file, problem.source.line) == ("frozen_copy", str(seed2), made)
    script = json.loads(
        subprocess.run([TFVIZ, "check", str(seed2), "--json"], capture_output=True, text=True).stdout
    )
    assert [(p["kind"], p["source"]["line"]) for p in script["problems"]] == [("frozen_copy", made)]


def test_what_the_function_prints_shows_once_where_it_would(tmp_path):
    """A script calling ``tfviz.check`` on a function that prints, its stdout a plain file: the
    lines show there once each (the analysis reads the function's output from a pipe of its
    own, and passes it on through a copy of the caller's descriptor, not back into the pipe)."""
    program = tmp_path / "prints.py"
    program.write_text(
        "import tensorflow as tf\nimport tfviz\n\nw = tf.Variable(2.0)\n\n\n"
        "def loss():\n    print('computing the loss', flush=True)\n    return w * w\n\n\n"
        "report = tfviz.check(loss)\nprint('ok' if report.ok else 'problems')\n"
    )
    r = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert lines[-1] == "ok" and lines.count("computing the loss") >= 1
    assert set(lines[:-1]) == {"computing the loss"}


def test_a_check_leaves_its_analysis_to_reference_counting_not_to_the_cycle_collector():
    """The analysis's graph (the copied ops, which point at their tensors and back; the
    networkx graph, which holds views of itself) is freed when the check returns: nothing of it
    but the emptied networkx graph is left for the caller's next collection to walk. The report
    still holds the whole graph."""
    import gc

    import keras
    import networkx as nx
    import tensorflow as tf

    from tfviz.engine.copiedgraph import CopiedOp, CopiedTensor

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.BatchNormalization()])
    x = tf.random.normal([32, 8])

    def loss():
        return tf.reduce_mean(model(x, training=True) ** 2)

    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        report = tfviz.check(loss)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [
            o
            for o in gc.garbage
            if isinstance(o, (CopiedOp, CopiedTensor)) or (isinstance(o, nx.Graph) and len(o) > 0)
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert left == []
    assert report.ok and len(report.graph.ops) > 20 and {o.type for o in report.graph.ops} >= {"MatMul"}


def test_a_second_check_reuses_what_the_gradient_functions_said_of_stopped_ports(monkeypatch):
    """Batch norm's variance is a squared difference from its stopped mean: the tape skips that
    port, and the first check asks the op's gradient function of it once more in the pass. The
    process keeps that answer (a notebook checking its model again): a second check runs no
    gradient function again, and says the same, op by op, as a check that asks afresh."""
    import keras
    import tensorflow as tf

    from tfviz.engine import eagerstream

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.BatchNormalization()])
    x = tf.random.normal([32, 8])

    def loss():
        return tf.reduce_mean(model(x, training=True) ** 2)

    asked: list[str] = []
    ask = eagerstream.OutputGradients._ask_skipped

    def counting(self, name, rest, call):
        def called(*args):
            asked.append(name)
            return call(*args)

        return ask(self, name, rest, called)

    monkeypatch.setattr(eagerstream.OutputGradients, "_ask_skipped", counting)
    from tfviz.analysis import diagnose
    from tfviz.engine import gradrules

    for module, name in ((eagerstream, "ASKED_AGAIN"), (gradrules, "PROBED")):
        monkeypatch.setattr(module, name, {})  # nothing asked or probed before in this process
        monkeypatch.setattr(diagnose, name, getattr(module, name))

    def said(report):
        return [(o.type, o.status, o.message) for o in report.graph.ops], [
            (v.name, v.status, v.kind) for v in report.variables
        ]

    first = tfviz.check(loss)
    assert asked and {s[0] for s in eagerstream.ASKED_AGAIN} == {"SquaredDifference"}
    asked.clear()
    second = tfviz.check(loss)
    assert asked == [] and first.timings_s["probes"] == second.timings_s["probes"] == 0
    eagerstream.ASKED_AGAIN.clear()  # the slow twin: asked afresh
    afresh = tfviz.check(loss)
    assert asked and said(second) == said(first) == said(afresh)


def test_a_second_check_reuses_the_probes_and_says_the_same():
    """The process's probe verdicts serve a second check (a notebook checking its model
    again): its report is the first's, op by op, made with no probe of its own."""
    import tensorflow as tf

    from tfviz.engine import gradrules

    conv = tf.keras.layers.Conv2D(2, 3)
    head = tf.Variable(tf.ones([2]), name="head")
    images = tf.random.normal([1, 6, 6, 1])

    @tf.custom_gradient
    def clipped(x):
        return x, lambda dy: tf.clip_by_value(dy, -1.0, 1.0)

    def loss():
        h = tf.nn.relu(conv(images))
        counts = tf.cast(tf.cast(h, tf.int32), tf.float32)  # an integer cut
        return (
            tf.reduce_sum(clipped(h) * head) + tf.reduce_sum(counts) + tf.reduce_sum(tf.stop_gradient(head))
        )

    gradrules.PROBED.clear()
    first = tfviz.check(loss)
    second = tfviz.check(loss)
    assert first.timings_s["probes"] > 0 and second.timings_s["probes"] == 0
    assert [(o.type, o.status) for o in first.graph.ops] == [(o.type, o.status) for o in second.graph.ops]
    assert [(v.name, v.status, v.kind) for v in first.variables] == [
        (v.name, v.status, v.kind) for v in second.variables
    ]
    assert [(p.kind, p.op_type) for p in first.problems] == [(p.kind, p.op_type) for p in second.problems]


@pytest.mark.parametrize("mode", ["as_written", "scan"])
def test_every_variable_a_check_writes_is_saved_before_it_and_put_back(mode):
    """The variables an in-process check writes are saved as it first writes each
    (tfviz.program.written), not found among every live object first. Against that scan (the
    slow twin), on every bundled example with a target and on training steps (eager and
    compiled, after training with them; a seeded generator, a counter, batch norm and
    dropout): each variable whose value moved by the time the check puts values back had been
    saved, with its value from before, and after the check every variable holds its value
    from before. The slow twin, switched on, leaves every variable as it was too."""
    program = ROOT / "tests" / "programs" / "api" / "written.py"
    args = [] if mode == "as_written" else ["scan", "steps"]
    r = subprocess.run([sys.executable, str(program), *args], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    cases = {c["case"]: c for c in map(json.loads, r.stdout.splitlines())}
    assert {"loss_with_state", "train_step", "compiled_step"} <= set(cases)
    assert all(c["changed_after"] == 0 for c in cases.values()), cases
    for name in ("loss_with_state", "train_step", "compiled_step"):
        assert cases[name]["said"] == "ok", cases[name]
    if mode == "scan":
        return
    assert len(cases) > 20
    assert all(c["unsaved"] == 0 and c["wrong"] == 0 for c in cases.values()), cases
    # what moved: batch norm's statistics (ResNet50's 53 layers, two each), the counter and
    # the generator's state; never an optimizer's update, which the steps stop before
    assert cases["healthy_resnet50.py"]["moved"] == 106
    assert cases["loss_with_state"]["moved"] == 5
    assert cases["compiled_step"]["moved"] == cases["train_step"]["moved"] == 3


def test_a_variable_read_before_its_first_write_is_saved_without_asking_whether_it_holds_one(monkeypatch):
    """A variable is saved just before its first write. One that an op of the analysis read
    first holds a value: its save reads it and asks nothing more (``VarIsInitializedOp``, whose
    kernel TensorFlow makes anew for each batch norm statistic of a process's first check).
    One the analysis makes is still asked, and saves no value: its first write is its initial
    value. Put back, the first holds its value from before."""
    import tensorflow as tf
    from tensorflow.python import pywrap_tfe

    from tfviz.program import written

    asked: list[str] = []
    execute = pywrap_tfe.TFE_Py_Execute

    def noting(ctx, device, op_type, *rest):
        asked.append(op_type)
        return execute(ctx, device, op_type, *rest)

    monkeypatch.setattr(pywrap_tfe, "TFE_Py_Execute", noting)  # the C API entry a save reads by
    v = tf.Variable([1.0, 2.0])
    saving = written.WrittenVariables()
    with saving:
        v.assign_add(v * 2.0)  # read, then written
        made = tf.Variable([5.0])  # made here: nothing was read of it before its first write
    assert asked.count("VarIsInitializedOp") == 1 and asked.count("ReadVariableOp") == 1
    assert saving.saved[id(v.handle)][1].numpy().tolist() == [1.0, 2.0]
    assert saving.saved[id(made.handle)][1] is None
    saving.restore()
    assert v.numpy().tolist() == [1.0, 2.0]


def test_the_functions_own_calls_warn_and_log_as_the_callers_own_calls_do():
    """A loss and a training step that make Keras warn, checked in the caller's process: the
    warning is shown, from Keras' own line, as the caller's own call shows it (tfviz's silence
    of TensorFlow's and Keras' warnings hid it), once in the process, as ``python`` shows it
    (the checks made every module's warning registry stale, and it was shown at each check
    and at the caller's own call after them); and each function runs with the TensorFlow
    logger's level the caller has at that check (INFO, then WARNING: not the level of the
    first check, nor tfviz's ERROR)."""
    program = ROOT / "tests" / "programs" / "api" / "warns.py"
    runs = {
        mode: subprocess.run(
            [sys.executable, str(program), mode], capture_output=True, text=True, timeout=600, cwd=ROOT
        )
        for mode in ("python", "tfviz")
    }
    for r in runs.values():
        assert r.returncode == 0, r.stderr[-3000:]

    def warned(stderr: str) -> list[str]:
        return [line for line in stderr.splitlines() if "UserWarning:" in line]

    theirs, ours = warned(runs["python"].stderr), warned(runs["tfviz"].stderr)
    assert len(theirs) == 1 and "functional.py" in theirs[0] and "structure of `inputs`" in theirs[0]
    assert ours == theirs
    levels = [json.loads(r.stdout.strip().splitlines()[-1]) for r in runs.values()]
    assert levels[0] == levels[1] == {"levels": [20, 30], "after": 30}


_OWN_CHECK = """\
import tensorflow as tf
import tfviz

w = tf.Variable([1.0, 2.0, 3.0])
b = tf.Variable(0.5)
x = tf.constant([4.0, 5.0, 6.0])
opt = tf.keras.optimizers.SGD(0.1)


def train_step(scale):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(x * b) * scale
    grads = tape.gradient(loss, [w, b])
    opt.apply_gradients([(g, v) for g, v in zip(grads, [w, b]) if g is not None])
    return loss


print("checked:", tfviz.check(train_step, args=(2.0,)).ok)
"""


@pytest.mark.parametrize("trains", [True, False])
def test_a_program_that_checks_itself_is_stopped_at_its_own_step_not_at_its_check(trains, tmp_path):
    """``tfviz check`` on a program that calls tfviz.check on its own step: that check runs as
    under ``python`` (its report printed, nothing applied), and none of its gradient calls is a
    step of the program. The step is the training loop's first, or there is none to stop at,
    said with the check's line. It stopped at the analysis's own gradient call, inside the
    check, and said it could not find the tape's statement at the check's line."""
    program = tmp_path / "checks_itself.py"
    program.write_text(_OWN_CHECK + ("for _ in range(3):\n    train_step(2.0)\n" if trains else ""))
    rc, report = check_json(program)
    if not trains:
        assert rc == 2
        error = report["error"]
        assert "ran to the end without computing a gradient" in error["message"]
        assert f"tfviz.check() at {program}:18" in error["message"]
        return
    import runpy

    import tensorflow as tf

    names = runpy.run_path(str(program), run_name="oracle")  # the check's line prints; nothing else
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(names["x"] * names["b"]) * 2.0
    assert tape.gradient(loss, [names["w"], names["b"]])[0] is None  # TensorFlow: w gets none
    assert rc == 1
    assert report["target"] == "tape.gradient at checks_itself.py:13"
    assert report["stdout"] == "checked: False\n"  # the program's own check, as it printed it
    assert {(v["name"], v["status"], v["kind"]) for v in report["variables"]} == {
        ("b", "connected", None),
        ("w", "disconnected", "not_read"),
    }
    (problem,) = report["problems"]
    assert (problem["kind"], problem["source"]["line"]) == ("not_read", 4)
