"""The cause is as right as the verdict: for each bug report below, the kind, the op and the
line tfviz names, checked through the installed ``tfviz`` against what TensorFlow itself
returns for the same loss."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import EXAMPLES, ROOT, check_json, line_of

LOSSES = ROOT / "tests" / "programs" / "losses"
TFVIZ = Path(sys.executable).with_name("tfviz")


def _tensorflow(path: Path, names: list[str]):
    """TensorFlow's own gradients of the script's ``loss()`` for the variables ``names``
    (module-level names), or the exception its tape raises."""
    import tensorflow as tf

    ns = runpy.run_path(str(path))
    variables = [ns[n] for n in names]
    with tf.GradientTape() as tape:
        loss = ns["loss"]()
    try:
        return tape.gradient(loss, variables)
    except Exception as exc:  # noqa: BLE001 - TensorFlow's answer, whatever it raises
        return exc


def test_numpy_function_is_named_at_its_line_not_as_an_unused_value():
    path = LOSSES / "numpy_function_sliced.py"
    (g,) = _tensorflow(path, ["w"])
    assert g is None  # TensorFlow: no gradient through tf.numpy_function
    rc, report = check_json(path)
    assert rc == 1
    (w,) = report["variables"]
    assert (w["status"], w["kind"], w["grad_norm"]) == ("disconnected", "py_function", None)
    (p,) = report["problems"]
    assert p["kind"] == "py_function" and p["op_type"] == "PyFunc"
    assert p["source"]["line"] == line_of(path, "tf.numpy_function(")


def test_a_custom_gradient_missing_a_variable_is_named_with_tensorflows_error():
    path = LOSSES / "custom_gradient_missing_variable.py"
    raised = _tensorflow(path, ["w", "act_scale"])
    assert isinstance(raised, ValueError) and "Must return gradient for each variable" in str(raised)
    rc, report = check_json(path)
    assert rc == 1
    assert {(v["status"], v["kind"]) for v in report["variables"]} == {("broken", "unimplemented")}
    (p,) = report["problems"]
    assert p["kind"] == "unimplemented" and "Must return gradient for each variable" in p["message"]
    # at the gradient function, where the fix goes, and named as the function the user wrote
    assert p["source"]["line"] == line_of(path, "def grad_fn(")
    assert "scaled_relu (custom gradient)" in report["variables"][0]["explanation"]
    assert "please report" not in json.dumps(report)


def test_softmax_cross_entropy_gives_its_labels_no_second_order_gradient_whatever_the_values():
    import tensorflow as tf

    path = LOSSES / "softmax_labels_second_order.py"
    ns = runpy.run_path(str(path))
    with tf.GradientTape() as tape:
        loss = ns["loss"]()
    grads = tape.gradient(loss, ns["teacher"].trainable_variables)
    assert all(g is not None and not np.any(g.numpy()) for g in grads)  # TensorFlow: exact zeros
    rc, report = check_json(path)
    assert rc == 1  # the teacher never trains: an error, not a warning
    (p,) = report["problems"]
    assert (p["kind"], p["severity"], p["op_type"]) == ("zero", "error", "SoftmaxCrossEntropyWithLogits")
    assert "whatever the values" in p["message"] and "ReLU" not in p["hint"]
    assert p["source"]["line"] == line_of(path, "softmax_cross_entropy_with_logits(")
    # the hint's rewrite does give the labels a second-order gradient, as TensorFlow computes it
    teacher, x, logits = ns["teacher"], ns["x"], ns["logits"]
    with tf.GradientTape() as tape:
        labels = tf.nn.softmax(teacher(x))
        with tf.GradientTape() as inner:
            inner.watch(logits)
            ce = -tf.reduce_sum(labels * tf.nn.log_softmax(logits), axis=-1)
        g = inner.gradient(ce, logits)
        penalty = tf.reduce_sum(g * g)
    assert all(np.any(g.numpy()) for g in tape.gradient(penalty, teacher.trainable_variables))


def test_a_gradient_that_does_not_exist_has_no_norm():
    """In a tf.while_loop TensorFlow hands back zeros for a cut variable, eagerly None: a
    gradient that does not exist is not a gradient of size 0."""
    import tensorflow as tf

    path = EXAMPLES / "rnn_while_int_cast.py"
    ns = runpy.run_path(str(path))
    with tf.GradientTape() as tape:
        loss = ns["loss"]()
    assert tape.gradient(loss, ns["cell"].w_skip) is None  # eagerly: None
    rc, report = check_json(path)
    row = next(v for v in report["variables"] if v["name"] == "cell.w_skip")
    assert row["status"] == "disconnected" and row["grad_norm"] is None
    text = subprocess.run(
        [str(TFVIZ), "check", str(path)], capture_output=True, text=True, timeout=600, cwd=ROOT
    ).stdout
    (line,) = [ln for ln in text.splitlines() if "cell.w_skip" in ln and "disconnected" in ln]
    assert "|grad|" not in line


@pytest.mark.parametrize("until", [("--until", "none")])
def test_a_gradient_the_program_drops_as_none_is_not_called_untrained(until):
    """The program filters out None gradients before its update (TensorFlow's own gradients
    reach it now): that is the disconnection, not an update that forgot the variable."""
    rc, report = check_json(EXAMPLES / "train_cond_branch.py", *until)
    aux = [p for p in report["problems"] if "w_aux" in p["variables"]]
    assert [p["kind"] for p in aux] == ["zero"]


def test_a_nans_origin_and_every_edge_carrying_it_are_drawn_as_nan(tmp_path):
    """After ``--until nan``, the graph says what the problem says: TensorFlow's forward pass
    is already NaN at the division, and every gradient that flows back from it is not finite."""
    import math

    import tensorflow as tf

    path = EXAMPLES / "train_nan_sqrt_variance.py"
    saved = tmp_path / "nan.json"
    rc, report = check_json(path, "--until", "nan", "--graph", str(saved))
    assert rc == 1
    (p,) = [p for p in report["problems"] if p["kind"] == "nan"]
    assert p["op_type"] == "RealDiv" and "forward pass" in p["message"]
    graph = json.loads(saved.read_text())["graph"]
    ops = {o["id"]: o for o in graph["ops"]}
    assert ops[p["op"]]["status"] == "nan" and ops[p["op"]]["message"] == p["message"]
    into = [e for e in graph["edges"] if e["dst"] == p["op"]]
    assert into and all(e["status"] == "nan" for e in into)
    # what TensorFlow says of the same division: 0 / sqrt(0) is NaN, its gradient too
    zero = tf.constant([0.0])
    with tf.GradientTape() as tape:
        tape.watch(zero)
        q = zero / tf.sqrt(zero)
    assert math.isnan(float(q[0])) and math.isnan(float(tape.gradient(q, zero)[0]))
    # no edge the NaN never reaches is drawn as NaN: the loss's own gradient is finite
    (last,) = [e for e in graph["edges"] if e["dst"] == "__target__"]
    assert last["status"] == "passes" and last["grad_norm"] == 1.0


def test_a_loss_scaled_for_mixed_precision_is_said_with_its_scale():
    """Under mixed_float16 the step differentiates the loss its LossScaleOptimizer scaled: the
    report says by how much, and each |grad| is what the program's gradient call returns."""
    import math

    from tests.test_program_mode import _norm, truth

    path = ROOT / "tests" / "programs" / "corpus" / "mixed_precision_loss_scale_custom_loop.py"
    rc, report = check_json(path, "--step", "2")
    assert rc == 0, report
    (note,) = [n for n in report["notes"] if "LossScaleOptimizer" in n]
    assert "32768" in note  # Keras 3's initial loss scale, 2 ** 15, unchanged by two finite steps
    theirs = {_norm(s["name"]): s["norm"] for s in truth(path, step=2)["sources"]}
    ours = {_norm(v["tf_name"]): v["grad_norm"] for v in report["variables"]}
    assert ours.keys() == theirs.keys()
    assert all(math.isclose(ours[n], theirs[n], rel_tol=2e-3) for n in ours), (ours, theirs)
    assert min(ours.values()) > 100  # scaled: the unscaled gradients are about 2 ** 15 smaller


@pytest.mark.parametrize("eager", [False, True])
def test_a_loop_rnns_integer_gate_is_one_cut_and_no_disagreement(eager):
    """TensorFlow: zeros for W_gate in the tf.function step (a tf.while_loop), None eagerly;
    both are the integer cut at the gate's line, said once, with no disagreement to report."""
    from tests.test_program_mode import truth

    path = ROOT / "tests" / "programs" / "cause" / "loop_rnn_int_gate.py"
    args = ["--", "--eager"] if eager else []
    t = truth(path, args=("--eager",) if eager else ())
    gate = next(s for s in t["sources"] if s["name"].startswith("W_gate"))
    assert gate["status"] == ("disconnected" if eager else "zero")
    rc, report = check_json(path, *args)
    assert rc == 1
    (p,) = report["problems"]
    assert (p["kind"], p["variables"]) == ("integer", ["W_gate"])
    lines = [i for i, ln in enumerate(path.read_text().splitlines(), 1) if "gate = tf.cast(" in ln]
    assert p["source"]["line"] == lines[1 if eager else 0]  # eager_step's own line, or train_step's
    row = next(v for v in report["variables"] if v["name"] == "W_gate")
    assert row["status"] == "disconnected" and row["grad_norm"] is None


def test_a_zero_is_traced_back_to_the_cast_that_makes_the_input_zero():
    """Rescaling(1/255, dtype="uint8") turns every pixel into 0: TensorFlow gives the encoder
    exact-zero gradients. The cause named is that cast, not the dead ReLU it leads to, and
    an encoder that trains nothing at all is an error."""
    import keras

    from tests.test_program_mode import truth

    path = ROOT / "tests" / "programs" / "cause" / "rescaling_uint8.py"
    images = np.random.randint(0, 256, size=(4, 8, 8, 3)).astype("uint8")
    assert not np.any(keras.layers.Rescaling(1 / 255, dtype="uint8")(images).numpy())
    t = truth(path)
    encoder = [s for s in t["sources"] if s["name"].startswith("encoder/")]
    assert encoder and all(s["status"] == "zero" for s in encoder)  # TensorFlow: exact zeros
    rc, report = check_json(path)
    assert rc == 1
    (p,) = [p for p in report["problems"] if p["kind"] == "zero"]
    assert (p["op_type"], p["severity"]) == ("Cast", "error")
    assert "uint8" in p["message"] and "encoder trains nothing" in p["message"]
    assert "Rescaling" in p["hint"] and "ReLU" not in p["hint"]
    assert {v["name"] for v in report["variables"] if v["kind"] == "zero"} <= set(p["variables"])


def test_a_batchnorm_with_one_value_per_channel_is_named_with_its_sizes():
    """TensorFlow gives the innermost block and the one after it exact zeros: that
    BatchNormalization normalizes one value per channel. Named with its input's size and
    the line that built it, not as a dead ReLU."""
    from tests.test_program_mode import truth

    path = ROOT / "tests" / "programs" / "cause" / "batchnorm_one_value.py"
    zeros = [s["name"] for s in truth(path)["sources"] if s["status"] == "zero"]
    assert len(zeros) == 6
    rc, report = check_json(path)
    assert rc == 1
    (p,) = report["problems"]
    assert (p["kind"], p["severity"]) == ("zero", "error")
    assert "BatchNormalization" in p["message"] and "1x1x1x16 (batch 1, a 1x1 map)" in p["message"]
    assert p["source"]["line"] == line_of(path, "d3 = downsample(16)(d2)")
    assert "LeakyReLU" not in p["hint"] and len(p["variables"]) == 6


def test_an_output_compiled_without_a_loss_is_named_at_its_compile():
    """TensorFlow gives the box head's variables None; the cause is compile()'s loss dict,
    which leaves that output out, and the report says so at that line."""
    from tests.test_program_mode import truth

    path = ROOT / "tests" / "programs" / "cause" / "output_without_loss.py"
    box = [s for s in truth(path)["sources"] if s["name"].startswith("box/")]
    assert box and all(s["status"] == "disconnected" for s in box)
    rc, report = check_json(path)
    (p,) = report["problems"]
    assert p["kind"] == "not_read" and "output 'box' has no loss in compile()" in p["message"]
    assert p["source"]["line"] == line_of(path, "model.compile(")
    assert "'box'" in p["hint"] and ".numpy()" not in p["message"]
    assert sorted(p["variables"]) == ['model.get_layer("box").bias', 'model.get_layer("box").kernel']


def test_a_zero_gradient_variable_says_zero_on_its_own_hop(tmp_path):
    """The path view's first hop is the variable itself: a variable TensorFlow gives an
    exact-zero gradient reads "zero", norm 0, there, as its row does; no gradient, no norm."""
    import tensorflow as tf

    from tfviz.analysisfile import load_analysis
    from tfviz.structure.gradient_path import gradient_path

    path = EXAMPLES / "kind_zero_dead_relu.py"
    ns = runpy.run_path(str(path))
    with tf.GradientTape() as tape:
        loss = ns["loss"]()
    (g,) = tape.gradient(loss, [ns["dead"]])
    assert not np.any(g.numpy())  # TensorFlow: exact zeros
    saved = tmp_path / "a.json"
    check_json(path, "--graph", str(saved))
    report = load_analysis(saved)
    first = gradient_path(report, "var:dead").hops[0]
    assert (first.op, first.status, first.grad_norm) == ("var:dead", "zero", 0.0)
    # an op no gradient reaches (behind a tf.stop_gradient) has no norm either
    cut = tmp_path / "cut.json"
    check_json(EXAMPLES / "kind_stop_gradient.py", "--graph", str(cut))
    starved = [o for o in load_analysis(cut).graph.ops if o.status == "starved"]
    assert starved and all(o.grad_norm is None for o in starved)


def test_a_py_function_that_reads_numpy_is_named_at_its_line():
    """TensorFlow raises in the encoder's BiasAddGrad: the gradient that reaches it came out of
    a tf.py_function whose Python takes the values out of TensorFlow. The problem names that
    EagerPyFunc at its line, not TensorFlow's error alone."""
    path = LOSSES / "py_function_numpy.py"
    import tensorflow as tf

    ns = runpy.run_path(str(path))
    with tf.GradientTape() as tape:
        loss = ns["loss"]()
    with pytest.raises(Exception, match="BiasAddGrad"):
        tape.gradient(loss, ns["encoder"].trainable_variables)
    rc, report = check_json(path)
    assert rc == 1
    (p,) = report["problems"]
    assert (p["op_type"], p["source"]["line"]) == ("EagerPyFunc", line_of(path, "tf.py_function("))
    assert "layers before it get no gradient" in p["message"] and "function_node" not in p["message"]
    assert {v["status"] for v in report["variables"]} == {"broken"}


@pytest.mark.parametrize("where", ["loop", "in-function", "at-top"])
def test_a_model_called_before_the_tape_opens_is_named_by_where_it_is_called(where):
    """TensorFlow gives every weight None when the model runs before the step's tape opens.
    Called in the step's own loop or function, just above the tape, it is the tape that does
    not record the forward pass (``outside_tape``), and the fix is to call the model under it;
    called once at the script's top, what the loop uses is a frozen copy of its output."""
    from tests.test_program_mode import truth

    path = ROOT / "tests" / "programs" / "cause" / "model_called_before_tape.py"
    flag = {"loop": (), "in-function": ("--in-function",), "at-top": ("--at-top",)}[where]
    sources = truth(path, args=flag)["sources"]
    assert len(sources) == 4 and all(s["status"] == "disconnected" for s in sources)  # TensorFlow: None
    rc, report = check_json(path, "--", *flag)
    assert rc == 1
    kind = "frozen_copy" if where == "at-top" else "outside_tape"
    assert {(v["status"], v["kind"]) for v in report["variables"]} == {("disconnected", kind)}
    (p,) = report["problems"]
    calls = [i for i, ln in enumerate(path.read_text().splitlines(), 1) if "pred = model(x" in ln]
    called = calls[{"in-function": 0, "at-top": 1, "loop": 2}[where]]
    assert (p["kind"], p["source"]["line"]) == (kind, called)
    if kind == "outside_tape":
        tape = p["source"]["line"] + 1  # the tape opens on the line after the model's call
        assert "with tf.GradientTape()" in path.read_text().splitlines()[tape - 1]
        assert (
            f"before the step's `with tf.GradientTape()` at model_called_before_tape.py:{tape} opens"
            in (p["message"])
        )
        assert "inside the `with tf.GradientTape()` block" in p["hint"]
    else:
        assert "build() or import time" in p["hint"]


def _unnumbered(name: str) -> str:
    """A variable's TensorFlow name without Keras' per-process numbering (``transposed_1``)."""
    import re

    return "/".join(re.sub(r"_\d+$", "", part) for part in name.split(":")[0].split("/"))


def test_a_weight_copied_through_numpy_is_a_frozen_copy_at_the_line_that_read_it_out():
    """No op links a variable to a tensor made of its values read out (``.numpy()``):
    TensorFlow gives the weight None. The cause is the copy, at the line that read it out,
    at a script's top and in a layer's ``build()``: the same in a script's ``loss()``, in
    a check in process of that ``loss()``, and in a program that trains with ``fit`` or a
    custom loop. Before, a script's run said only that the weight was never read."""
    import tensorflow as tf

    import tfviz
    from tests.test_program_mode import truth

    path = LOSSES / "copied_through_numpy.py"  # a loss() script, and a program run as one
    ns = runpy.run_path(str(path))
    weights = [ns["dense"].kernel, ns["dense"].bias, ns["layer"].w]
    with tf.GradientTape() as tape:
        value = ns["loss"]()
    assert [g is None for g in tape.gradient(value, weights)] == [True, False, True]  # TensorFlow
    copied = {
        "dense.kernel": line_of(path, "frozen = tf.constant("),
        "layer.w": line_of(path, "self.w_t = tf.constant("),
    }
    rc, report = check_json(path)
    assert rc == 1
    cut = {v["name"]: v["kind"] for v in report["variables"] if v["status"] == "disconnected"}
    assert cut == {"dense.kernel": "frozen_copy", "layer.w": "frozen_copy"}
    assert {p["variables"][0]: (p["kind"], p["source"]["line"]) for p in report["problems"]} == {
        name: ("frozen_copy", line) for name, line in copied.items()
    }
    here = tfviz.check(ns["loss"])
    assert {p.variables[0]: (p.kind, p.source.line) for p in here.problems} == {
        name: ("frozen_copy", line) for name, line in copied.items()
    }

    # run as a program that trains: a custom loop on loss(), and fit on a model built anew
    none = [s["name"] for s in truth(path, args=("--loop",))["sources"] if s["status"] != "connected"]
    assert [_unnumbered(n) for n in none] == ["dense/kernel", "transposed/variable"]  # TensorFlow: None
    rc, report = check_json(path, "--run", "--", "--loop")
    assert rc == 1
    cut = {v["name"]: v["kind"] for v in report["variables"] if v["status"] == "disconnected"}
    assert cut == {"dense.kernel": "frozen_copy", "layer.w": "frozen_copy"}
    assert {p["variables"][0]: (p["kind"], p["source"]["line"]) for p in report["problems"]} == {
        name: ("frozen_copy", line) for name, line in copied.items()
    }
    none = [s["name"] for s in truth(path)["sources"] if s["status"] != "connected"]
    assert [_unnumbered(n) for n in none] == ["sequential/transposed/variable"]  # TensorFlow: None for w
    rc, report = check_json(path, "--run")
    assert rc == 1
    cut = {v["name"]: v["kind"] for v in report["variables"] if v["status"] == "disconnected"}
    assert cut == {"model.layers[0].w": "frozen_copy"}
    (p,) = report["problems"]
    assert (p["kind"], p["source"]["line"]) == ("frozen_copy", copied["layer.w"])


@pytest.mark.parametrize("flag", [(), ("--keras-loss",)], ids=["tf.constant", "keras-loss"])
def test_a_prediction_read_out_above_the_tape_is_named_at_the_read_out(flag):
    """``pred = model(x).numpy()`` above the tape, the loss computed under it from ``pred``:
    TensorFlow gives every weight None. The cause is the forward pass run before the tape and
    read out into Python, at that line: ``outside_tape``, not a weight ``never read`` at the
    model's line, which the report said before."""
    from tests.test_program_mode import truth

    path = ROOT / "tests" / "programs" / "cause" / "read_out_before_tape.py"
    sources = truth(path, args=flag)["sources"]
    assert len(sources) == 4 and all(s["status"] == "disconnected" for s in sources)  # TensorFlow: None
    rc, report = check_json(path, "--", *flag)
    assert rc == 1
    assert {(v["status"], v["kind"]) for v in report["variables"]} == {("disconnected", "outside_tape")}
    (p,) = report["problems"]
    read = line_of(path, "pred = model(x).numpy()")
    assert (p["kind"], p["source"]["line"]) == ("outside_tape", read)
    named = f"pred is computed from model.layers[0].kernel at read_out_before_tape.py:{read}"
    assert p["message"].startswith(named)  # the array as the program holds it
    assert f"read_out_before_tape.py:{read} and read out into Python there (.numpy())" in p["message"]
    assert f"`with tf.GradientTape()` at read_out_before_tape.py:{read + 1} opens" in p["message"]
    assert "inside the `with tf.GradientTape()` block" in p["hint"]


@pytest.mark.parametrize(
    "flag", [("--inside",), ("--inside", "--keras-loss")], ids=["tf.constant", "keras-loss"]
)
def test_a_prediction_read_out_under_the_tape_is_named_at_the_read_out_as_not_read(flag):
    """``pred = model(x).numpy()`` under the tape, the loss computed from ``pred`` made a tensor
    again: TensorFlow gives every weight None. The tape records the model; the cut is the read
    into Python on that line (``not_read``, as a value read out), not a frozen copy made before
    the step, which the report said before."""
    from tests.test_program_mode import truth

    path = ROOT / "tests" / "programs" / "cause" / "read_out_before_tape.py"
    sources = truth(path, args=flag)["sources"]
    assert len(sources) == 4 and all(s["status"] == "disconnected" for s in sources)  # TensorFlow: None
    rc, report = check_json(path, "--", *flag)
    assert rc == 1
    assert {(v["status"], v["kind"]) for v in report["variables"]} == {("disconnected", "not_read")}
    (p,) = report["problems"]
    read = line_of(path, "            pred = model(x).numpy()")  # the one under the tape
    assert (p["kind"], p["severity"], p["source"]["line"]) == ("not_read", "error", read)
    assert (
        f"is computed from model.layers[0].kernel at read_out_before_tape.py:{read} and read out into"
        " Python there (.numpy()), under the step's tape"
    ) in p["message"]
    assert "not from its .numpy() array" in p["hint"]


def test_the_moving_statistics_asked_for_are_named_as_the_program_holds_them():
    """TensorFlow gives a BatchNormalization's moving statistics None when the step asks for
    the gradient of ``model.weights``: named by the program's own path to them, as the layer's
    trainable weights are, with the fix."""
    from tests.test_program_mode import truth

    path = ROOT / "tests" / "programs" / "cause" / "gradient_of_model_weights.py"
    none = {
        s["name"].split(":")[0].rsplit("/", 1)[-1]
        for s in truth(path)["sources"]
        if s["status"] != "connected"
    }
    assert none == {"moving_mean", "moving_variance"}  # TensorFlow: None for those alone
    rc, report = check_json(path)
    assert rc == 1
    cut = {v["name"]: v["kind"] for v in report["variables"] if v["status"] == "disconnected"}
    assert cut == {"model.layers[1].moving_mean": "not_read", "model.layers[1].moving_variance": "not_read"}
    assert {v["name"] for v in report["variables"] if v["status"] == "connected"} == {
        "model.layers[0].kernel",
        "model.layers[1].gamma",
        "model.layers[1].beta",
        "model.layers[2].kernel",
        "model.layers[2].bias",
    }
    (p,) = report["problems"]
    assert p["kind"] == "not_read" and "model.trainable_variables" in p["hint"]


def test_a_loss_computed_in_numpy_is_refused_with_what_tensorflow_does_and_the_fix():
    """TensorFlow's tape.gradient raises an AttributeError on a NumPy loss; the step is refused
    at its gradient call, saying that the loss was computed outside TensorFlow, and how to fix it."""
    import runpy

    path = ROOT / "tests" / "programs" / "cause" / "numpy_loss.py"
    with pytest.raises(AttributeError):  # TensorFlow, running the program as it is
        runpy.run_path(str(path))
    rc, report = check_json(path)
    assert rc == 2
    error = report["error"]
    assert error["line"] == line_of(path, "grads = tape.gradient(")
    assert "the loss handed to tape.gradient is a numpy float32, not a TensorFlow tensor" in error["message"]
    assert "tape.gradient raises an AttributeError on it" in error["message"]
    assert "inside the `with tf.GradientTape()` block" in error["message"]
