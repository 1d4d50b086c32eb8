"""``tfviz check --until``: the step it stops at is the first where TensorFlow's own gradients
go wrong.

The oracle runs each example as ``python`` would, here and without tfviz, with
``tape.gradient`` wrapped so that each gradient's state is noted as the program computes it
(see :func:`first_bad_step`): the first step at which a gradient (or the loss) is
non-finite, a gradient is None where an earlier step had one, or has been exactly zero for
K steps in a row, is the answer.
"""

from __future__ import annotations

import csv
import json
import math
import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES
from tfviz.program.watch import Watch, WatchStop, parse_until

TFVIZ = Path(sys.executable).with_name("tfviz")  # the installed command, beside this Python


def first_bad_step(path: Path, condition: str, zero_steps: int = 5) -> tuple[int, list[str]] | None:
    """The first gradient computation of the program at ``path`` where ``condition`` holds,
    by TensorFlow's own values as the program computes them, and the sources it holds for
    (None: never).

    ``tape.gradient`` is wrapped so that every call notes its gradients' state: right away
    when it runs eagerly, and from inside the graph (a ``tf.py_function`` that runs with each
    execution) when it is traced in a ``tf.function``, so a compiled step runs as compiled.
    The program runs to its end; the notes, in the order the steps ran, are then read.
    """
    import tensorflow as tf

    notes: list[tuple[bool, dict[int, tuple[str, bool, bool, bool]]]] = []
    original = tf.GradientTape.gradient

    def gradient(self, target, sources, *args, **kwargs):  # type: ignore[no-untyped-def]
        grads = original(self, target, sources, *args, **kwargs)
        flat_s, flat_g = tf.nest.flatten(sources), tf.nest.flatten(grads)
        keys = [(id(s), getattr(s, "path", None) or s.name.split(":")[0]) for s in flat_s]
        present = [g is not None for g in flat_g]
        values = [tf.convert_to_tensor(g) for g in flat_g if g is not None]
        finite = [tf.reduce_all(tf.math.is_finite(v)) for v in values]
        zero = [tf.logical_not(tf.reduce_any(tf.not_equal(v, 0))) for v in values]
        loss = [tf.reduce_all(tf.math.is_finite(t)) for t in tf.nest.flatten(target)]

        def note(loss_ok, fin, zer):  # type: ignore[no-untyped-def]
            f, z = iter(fin.numpy().tolist()), iter(zer.numpy().tolist())
            per = {}
            for (key, name), has in zip(keys, present):
                per[key] = (name, has, next(f) if has else True, next(z) if has else False)
            notes.append((bool(loss_ok.numpy()), per))

        args_ = [
            tf.reduce_all(tf.stack(loss)) if loss else tf.constant(True),
            tf.stack(finite) if finite else tf.zeros([0], tf.bool),
            tf.stack(zero) if zero else tf.zeros([0], tf.bool),
        ]
        if tf.executing_eagerly():
            note(*args_)
        else:
            tf.py_function(note, args_, Tout=[])
        return grads

    run_noting(path, gradient)
    had: set[int] = set()
    zeros: dict[int, int] = {}
    for step, (loss_ok, per) in enumerate(notes, 1):
        bad = []
        for key, (name, has, fin, zer) in per.items():
            if condition == "nan" and has and not fin:
                bad.append(name)
            if condition == "none" and not has and key in had:
                bad.append(name)
            if condition == "zero" and has:
                zeros[key] = zeros.get(key, 0) + 1 if zer else 0
                if zeros[key] >= zero_steps:
                    bad.append(name)
            if has:
                had.add(key)
        if bad or (condition == "nan" and not loss_ok):
            return step, bad
    return None


def gradient_norms_by_step(path: Path) -> list[dict[str, float]]:
    """Each gradient computation's norms by source (Keras' path of a variable), as the program
    at ``path`` computes them under ``python``: TensorFlow's gradients, summed in float64
    (noted from inside the graph where ``tape.gradient`` is traced, as :func:`first_bad_step`)."""
    import keras
    import numpy as np
    import tensorflow as tf

    notes: list[dict[str, float]] = []
    original = tf.GradientTape.gradient

    def gradient(self, target, sources, *args, **kwargs):  # type: ignore[no-untyped-def]
        grads = original(self, target, sources, *args, **kwargs)
        pairs = [
            (getattr(s, "path", None) or s.name.split(":")[0], g)
            for s, g in zip(tf.nest.flatten(sources), tf.nest.flatten(grads))
            if g is not None
        ]

        def note(*values):  # type: ignore[no-untyped-def]
            wide = [v.numpy().astype(np.float64) for v in values]
            notes.append({name: float(np.linalg.norm(v)) for (name, _), v in zip(pairs, wide, strict=True)})

        values = [tf.convert_to_tensor(g) for _, g in pairs]
        if tf.executing_eagerly():
            note(*values)
        else:
            tf.py_function(note, values, Tout=[])
        return grads

    keras.backend.clear_session()  # Keras names layers as in a fresh process (``sequential``)
    run_noting(path, gradient)
    return notes


def run_noting(path: Path, gradient: Any) -> None:
    """Run the program at ``path`` to its end, as ``python`` would, with ``gradient`` standing
    for ``tf.GradientTape.gradient`` (it notes what it is asked for), and Keras' compiled steps
    without XLA, which cannot run a ``tf.py_function`` (tfviz runs ``fit``'s steps without it)."""
    import keras
    import tensorflow as tf

    original, compile_ = tf.GradientTape.gradient, keras.Model.compile

    def compile_without_xla(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        kwargs["jit_compile"] = False
        return compile_(self, *args, **kwargs)

    cwd = os.getcwd()
    tf.GradientTape.gradient = gradient
    keras.Model.compile = compile_without_xla
    os.chdir(path.parent)
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        os.chdir(cwd)
        tf.GradientTape.gradient = original
        keras.Model.compile = compile_


@pytest.mark.parametrize(
    ("program", "until"),
    [
        # an eager loop whose last gradients (1e36 an element) square past float32's range
        (Path(__file__).parent / "programs" / "fidelity" / "diverging_loop.py", ["--until", "nan"]),
        # Model.fit's compiled steps, which no rule fires on: kept in the graph, read at the end
        (EXAMPLES / "train_healthy_fit.py", ["--until", "all", "--max-steps", "20"]),
    ],
    ids=["diverging-eager", "quiet-fit"],
)
def test_watched_norms_are_tensorflow_s(program: Path, until: list[str], tmp_path: Path) -> None:
    """Every gradient norm the record holds, and each layer's first, last, lowest and highest
    norm in the summary, are those of TensorFlow's own gradients at those steps (a layer's, the
    root of its variables' squared norms at each step). A finite gradient's norm is finite:
    summed in float32, a diverging step's overflowed to inf; and a layer's highest was its
    variables' highest, below the layer's own last."""
    truth = gradient_norms_by_step(program)
    record = tmp_path / "norms.csv"
    _, doc = check(str(program), *until, "--record", str(record))
    last = doc["watch"]["step"]
    assert last is not None and len(truth) >= last
    rows = list(csv.DictReader(line for line in record.read_text().splitlines() if not line.startswith("#")))
    assert {int(r["step"]) for r in rows} == set(range(1, last + 1))
    for r in rows:
        expected = truth[int(r["step"]) - 1][r["variable"]]
        assert math.isfinite(expected)
        assert float(r["grad_norm"]) == pytest.approx(expected, rel=1e-5), r
    per_step: dict[str, list[float]] = {}
    for norms in truth[:last]:
        layers: dict[str, float] = {}
        for name, norm in norms.items():
            layer = name.rsplit("/", 1)[0]
            layers[layer] = layers.get(layer, 0.0) + norm * norm
        for layer, square in layers.items():
            per_step.setdefault(layer, []).append(math.sqrt(square))
    seen = {x["name"]: x for x in doc["watch"]["layers"]}
    assert set(seen) == set(per_step)
    for layer, norms in per_step.items():
        x = seen[layer]
        got = (x["first"], x["last"], x["low"], x["high"])
        assert got == pytest.approx((norms[0], norms[-1], min(norms), max(norms)), rel=1e-5), layer
        assert x["low"] <= x["last"] <= x["high"]


def check(*args: str, cwd: Path | None = None) -> tuple[int, dict]:
    r = subprocess.run(
        [str(TFVIZ), "check", *args, "--json"], capture_output=True, text=True, timeout=600, cwd=cwd
    )
    return r.returncode, json.loads(r.stdout)


BROKEN = [
    # example, condition, a variable the condition must name (by the report's name); None
    # where TensorFlow's gradients are all finite at that step and its loss alone is not
    ("train_nan_log.py", "nan", "w"),
    ("train_nan_fit_lr.py", "nan", None),
    ("train_nan_sqrt_variance.py", "nan", "hidden.kernel"),
    ("train_dead_relu.py", "zero", "hidden.kernel"),
    ("train_cond_branch.py", "none", "w_aux"),
]


@pytest.mark.parametrize(("name", "condition", "variable"), BROKEN)
def test_stops_at_the_first_step_tensorflow_gets_wrong(
    name: str, condition: str, variable: str | None
) -> None:
    """The step, and the variables it names, are TensorFlow's: a variable whose gradient
    TensorFlow finds finite is not named as not finite, however large (its float32 norm past
    float32's range is no NaN of the gradient)."""
    truth = first_bad_step(EXAMPLES / name, condition)
    assert truth is not None, f"{name} never shows {condition}: the example is broken"
    step, bad = truth
    code, doc = check(str(EXAMPLES / name), "--until", condition)
    assert code == 1, doc
    watch = doc["watch"]
    assert (watch["fired"], watch["step"]) == (condition, step)
    assert len(watch["variables"]) == len(bad), (watch["variables"], bad)
    assert variable in watch["variables"] if bad else variable is None
    assert f"{name}:" in watch["at"]  # the line of the user's own code where the step is
    assert doc["ok"] is False and doc["variables"], "the step itself is diagnosed"


def test_nan_names_the_op_its_line_and_the_input_out_of_range() -> None:
    code, doc = check(str(EXAMPLES / "train_nan_log.py"), "--until", "nan")
    (p,) = [p for p in doc["problems"] if p["kind"] == "nan"]
    assert p["op_type"] == "Log" and "log(1 - p)" in p["source"]["code"]
    assert "Log of 0" in p["message"]
    assert sorted(p["variables"]) == ["b", "w"]


def test_a_nan_made_in_the_forward_pass_is_named_where_it_is_made() -> None:
    """The loss itself is NaN: the op to blame is the division by a zero root, not the loss."""
    code, doc = check(str(EXAMPLES / "train_nan_sqrt_variance.py"), "--until", "nan")
    (p,) = [p for p in doc["problems"] if p["kind"] == "nan"]
    assert p["op_type"] == "RealDiv" and "tf.sqrt(variance)" in p["source"]["code"]
    assert "forward pass" in p["message"] and "division by 0" in p["message"]
    assert all(v["blocked_at"] == [p["op"]] for v in doc["variables"] if v["kind"] == "nan")


def test_overflow_is_told_from_a_domain_error() -> None:
    code, doc = check(str(EXAMPLES / "train_nan_fit_lr.py"), "--until", "nan")
    (p,) = [p for p in doc["problems"] if p["kind"] == "nan"]
    assert "overflows float32" in p["message"] and "learning rate" in p["hint"]
    # the watched norms grew by orders of magnitude before the step: the summary shows it
    assert doc["watch"]["max_norm"] is None or doc["watch"]["max_norm"] > 1e6
    # and the exploding gradient's hint says it is the run's own doing, by those figures
    (grown,) = [p for p in doc["problems"] if p["kind"] == "exploding"]
    layer = max(doc["watch"]["layers"], key=lambda x: math.log10(x["last"] / x["first"]))
    decades = math.log10(layer["last"] / layer["first"])
    assert decades >= 3
    assert f"grew {decades:.1f} decades over the {doc['watch']['steps']} steps watched" in grown["hint"]
    assert "training diverges" in grown["hint"] and "initialised" not in grown["hint"]


def test_an_infinite_loss_with_finite_gradients_is_named_where_the_forward_pass_overflows() -> None:
    """TensorFlow's gradients of an infinite loss can all be finite (a square past float32's
    range has a finite derivative): no variable is called NaN then, and the error is where
    the forward pass overflows. A step later the weights those gradients made overflow the
    forward pass itself; the ``loss`` the previous step left infinite is no input of it."""
    program = Path(__file__).parent / "programs" / "fidelity" / "diverging_loop.py"
    truth = first_bad_step(program, "nan")
    assert truth == (5, [])  # TensorFlow: the loss is not finite, every gradient is
    code, doc = check(str(program), "--until", "nan")
    assert code == 1 and (doc["watch"]["fired"], doc["watch"]["step"]) == ("nan", 5)
    assert doc["watch"]["variables"] == [] and "loss is not finite" in doc["watch"]["detail"]
    assert all(v["kind"] != "nan" and math.isfinite(v["grad_norm"]) for v in doc["variables"])
    first = doc["problems"][0]
    assert (first["kind"], first["severity"], first["op_type"]) == ("nan", "error", "Pow")
    assert "though every gradient is finite" in first["message"] and "overflows float32" in first["message"]
    assert first["source"]["line"] == 20 and "learning rate" in first["hint"]
    code, doc = check(str(program), "--step", "6")
    (p,) = [p for p in doc["problems"] if p["kind"] == "nan"]
    assert p["op_type"] == "MatMul" and "forward pass" in p["message"] and "overflows float32" in p["message"]
    assert "input" not in p["message"]


def test_healthy_control_runs_to_max_steps_and_passes(tmp_path: Path) -> None:
    record = tmp_path / "record.csv"
    code, doc = check(
        str(EXAMPLES / "train_healthy_fit.py"), "--until", "all", "--max-steps", "20", "--record", str(record)
    )
    assert code == 0, doc
    watch = doc["watch"]
    assert watch["fired"] is None and watch["step"] == 20 and watch["steps"] == 20
    assert "epoch 2, batch 4" in watch["at"]  # 16 batches an epoch
    assert doc["ok"] is True
    assert {x["name"] for x in watch["layers"]} == {
        "sequential/dense",
        "sequential/dense_1",
        "sequential/dense_2",
    }
    rows = list(csv.DictReader(line for line in record.read_text().splitlines() if not line.startswith("#")))
    assert record.read_text().startswith("# written by tfviz")
    # the 20th is the step diagnosed: its gradients are in the record, and no update (it never ran)
    assert sorted({int(r["step"]) for r in rows}) == list(range(1, 21))
    assert len(rows) == 20 * 6
    assert {r["update_norm"] for r in rows if r["step"] == "20"} == {""}
    assert all(r["update_norm"] for r in rows if r["step"] != "20")


def test_program_that_ends_before_any_condition_exits_0() -> None:
    code, doc = check(str(EXAMPLES / "train_healthy_fit.py"), "--until", "nan")
    assert code == 0
    assert doc["watch"]["fired"] is None and doc["watch"]["step"] is None
    assert doc["watch"]["steps"] == 3 * 16


CORPUS = Path(__file__).parent / "programs" / "corpus"


def test_a_jit_compiled_step_is_watched_without_xla() -> None:
    """XLA cannot run the per-step host check: the step is run as the same tf.function without
    it, and the report says so."""
    code, doc = check(str(CORPUS / "jit_compile_feature_gate_regression.py"), "--until", "nan")
    assert code == 0, doc
    assert doc["watch"]["fired"] is None and doc["watch"]["steps"] == 5
    assert any("XLA" in n for n in doc["notes"])


def test_a_fit_step_that_runs_only_as_a_graph_is_captured_at_max_steps() -> None:
    """A tf.custom_gradient that TensorFlow refuses eagerly: the batch at --max-steps is captured
    from a trace of Keras' graph step, and it is that batch, not a later one."""
    code, doc = check(
        str(CORPUS / "custom_gradient_and_recompute_grad_lsq_quantized_mlp.py"),
        "--until",
        "all",
        "--max-steps",
        "4",
    )
    assert code in (0, 1), doc
    assert doc["watch"]["step"] == 4 and "epoch 1, batch 4" in doc["watch"]["at"]
    assert doc["variables"]


def test_record_matches_tensorflow(tmp_path: Path) -> None:
    """SGD without momentum moves each variable by exactly lr * its gradient."""
    import tensorflow as tf

    record = tmp_path / "dead.csv"
    code, doc = check(str(EXAMPLES / "train_dead_relu.py"), "--until", "zero", "--record", str(record))
    assert code == 1
    rows = list(csv.DictReader(line for line in record.read_text().splitlines() if not line.startswith("#")))
    by_step: dict[int, dict[str, dict[str, str]]] = {}
    for r in rows:
        by_step.setdefault(int(r["step"]), {})[r["variable"]] = r
    assert sorted(by_step) == list(range(1, doc["watch"]["step"] + 1))
    for step, per in by_step.items():
        if step == doc["watch"]["step"]:
            assert all(r["update_norm"] == "" for r in per.values())  # stopped before its update
            continue
        for r in per.values():
            # the change is measured as after - before, in float32: rounding at the weight's scale
            rounding = 2e-7 * (1 + float(r["weight_norm"]))
            assert math.isclose(
                float(r["update_norm"]), 0.12 * float(r["grad_norm"]), rel_tol=1e-4, abs_tol=rounding
            )
    # step 1's gradient norms, computed here from the same model and data
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(256, 8)).astype("float32")
    y = (x.sum(axis=1, keepdims=True) - 8.0).astype("float32")
    hidden = keras.layers.Dense(16, activation="relu")
    out = keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(0.5))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((out(hidden(x)) - y) ** 2)
    grads = tape.gradient(loss, hidden.trainable_variables + out.trainable_variables)
    names = ("hidden/kernel", "hidden/bias", "out/kernel", "out/bias")
    got = [float(by_step[1][n]["grad_norm"]) for n in names]
    assert got == pytest.approx([float(tf.norm(g)) for g in grads], rel=1e-5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-steps", "3"], "--max-steps goes with --until"),
        (["--until", "inf"], "unknown condition 'inf'"),
        (["--until", "nan", "--step", "2"], "use --max-steps"),
    ],
)
def test_bad_options_say_what_is_wrong(args: list[str], message: str) -> None:
    r = subprocess.run(
        [str(TFVIZ), "check", str(EXAMPLES / "train_nan_log.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_until_refuses_a_target_script() -> None:
    r = subprocess.run(
        [str(TFVIZ), "check", str(EXAMPLES / "kind_nan.py"), "--until", "nan"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2 and "--run" in r.stderr and "Traceback" not in r.stderr


# -- the rules, without TensorFlow ------------------------------------------------------


def _observe(w: Watch, step: int, norms: list[float | None], loss_ok: bool = True) -> None:
    present = [n is not None for n in norms]
    known = [n for n in norms if n is not None]
    w.observe(
        step,
        1,
        list(range(len(norms))),
        [f"v{i}" for i in range(len(norms))],
        [4] * len(norms),
        present,
        known,
        [math.isfinite(n) for n in known],
        loss_ok,
        [],
    )


def test_zero_waits_for_k_steps_in_a_row() -> None:
    w = Watch(["zero"], zero_steps=3)
    for step, norms in enumerate([[1.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]], 1):
        _observe(w, step, norms)
    with pytest.raises(WatchStop):
        _observe(w, 6, [0.0, 1.0])
    assert w.fired is not None and (w.fired.step, w.fired.variables) == (6, ["v0"])


def test_none_fires_only_after_a_gradient_was_seen() -> None:
    w = Watch(["none"])
    _observe(w, 1, [1.0, None])  # never had one: not this rule's business
    _observe(w, 2, [1.0, None])
    with pytest.raises(WatchStop):
        _observe(w, 3, [None, None])
    assert w.fired is not None and w.fired.variables == ["v0"]


def test_nan_fires_on_a_non_finite_loss_alone() -> None:
    w = Watch(["nan"])
    _observe(w, 1, [1.0])
    with pytest.raises(WatchStop):
        _observe(w, 2, [1.0], loss_ok=False)
    assert w.fired is not None and "loss" in w.fired.detail


def test_vanishing_uses_the_magnitude_rule() -> None:
    w = Watch(["vanishing"])
    _observe(w, 1, [1e-3, 1e-2, 1e-2, 1e-2])  # within 5 decades
    with pytest.raises(WatchStop):
        _observe(w, 2, [1e-9, 1e-2, 1e-2, 1e-2])
    assert w.fired is not None and w.fired.variables == ["v0"]


def test_parse_until() -> None:
    assert parse_until("all") == ["nan", "none", "zero", "vanishing", "exploding"]
    assert parse_until("zero,nan,zero") == ["zero", "nan"]


def test_a_watched_run_saves_as_a_valid_analysis(tmp_path: Path) -> None:
    from tfviz.analysisfile import load_analysis

    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(
        (Path(__file__).parents[1] / "tfviz" / "schemas" / "tfviz-analysis.schema.json").read_text()
    )
    saved = tmp_path / "watched.json"
    r = subprocess.run(
        [
            str(TFVIZ),
            "check",
            str(EXAMPLES / "train_cond_branch.py"),
            "--until",
            "none",
            "--graph",
            str(saved),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 1, r.stderr
    jsonschema.validate(json.loads(saved.read_text()), schema)
    report = load_analysis(saved)
    assert report.watch is not None and report.watch.fired == "none" and report.watch.layers
    # the cond runs in the program's Python loop, not in a tf.while_loop: never said to be in one
    (aux,) = [p for p in report.problems if "w_aux" in p.variables]
    assert "then branch" in aux.message and "loop" not in aux.message, aux.message


def test_ctrl_c_keeps_the_record_of_the_steps_watched(tmp_path: Path) -> None:
    import signal
    import time

    script = tmp_path / "endless.py"
    script.write_text(
        "import numpy as np\nimport tensorflow as tf\n\n"
        "w = tf.Variable(tf.ones([4, 1]), name='w')\nopt = tf.keras.optimizers.SGD(0.001)\n"
        "x = np.ones((8, 4), 'float32')\nwhile True:\n"
        "    with tf.GradientTape() as tape:\n        loss = tf.reduce_sum(x @ w)\n"
        "    opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))\n"
    )
    record = tmp_path / "norms.csv"
    proc = subprocess.Popen(
        [str(TFVIZ), "check", str(script), "--until", "nan", "--record", str(record)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a shell's background job ignores SIGINT, and its children inherit that
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    # the record's temporary is made before the program starts: wait for its first steps
    while not any(p.name.endswith(".tfviz-tmp") and p.stat().st_size > 200 for p in tmp_path.iterdir()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "record of the steps watched so far" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["endless.py", "norms.csv"]  # no temporary file
    rows = list(csv.DictReader(line for line in record.read_text().splitlines() if not line.startswith("#")))
    steps = [int(r["step"]) for r in rows]
    assert steps and steps == list(range(1, len(steps) + 1))
    assert all(float(r["grad_norm"]) == 16.0 for r in rows)  # d/dw sum(x @ w) = 8 per element, 4 of them


def _graph_steps(until: list[str], poison_at: int | None, steps: int = 40, zero_steps: int = 5):
    """A small MLP trained by a ``tf.function`` step whose gradients pass through
    :meth:`Watch.wrap`, as the run handler wraps them; the step also returns TensorFlow's own
    norms of the gradients it computed (the oracle). ``poison_at``: that step's input is NaN."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    w1 = tf.Variable(rng.normal(size=(8, 16)).astype("float32") * 0.3, name="w1")
    b1 = tf.Variable(np.zeros(16, "float32"), name="b1")
    w2 = tf.Variable(rng.normal(size=(16, 1)).astype("float32") * 0.3, name="w2")
    variables = [w1, b1, w2]
    watch = Watch(until, zero_steps=zero_steps)
    calls: list[int] = []
    real = watch._observe_packed
    watch._observe_packed = lambda *a: (calls.append(a[0]), real(*a))[1]  # type: ignore[method-assign]

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.tanh(x @ w1 + b1) @ w2 - y) ** 2)
        grads = tape.gradient(loss, variables)
        oracle = tf.stack([tf.norm(g) for g in grads])
        grads = watch.wrap(variables, grads, loss, 1)
        for v, g in zip(variables, grads):
            v.assign_sub(0.05 * g)
        return oracle

    seen, fired_at = [], None
    for i in range(1, steps + 1):
        x = rng.normal(size=(32, 8)).astype("float32")
        if i == poison_at:
            x[0, 0] = np.nan
        watch.base = i - 1
        try:
            seen.append(step(x, rng.normal(size=(32, 1)).astype("float32")).numpy())
        except Exception:  # noqa: BLE001 - the check stopped the step, as the handler sees it
            assert watch.fired is not None
            fired_at = i
            break
    return watch, calls, np.array(seen), fired_at


def test_quiet_graph_steps_keep_their_figures_in_the_graph_and_call_no_python() -> None:
    """Healthy steps, every rule on: no step calls back into Python, and the history read
    afterwards (steps, first, last, lowest, highest norm per variable) is TensorFlow's own."""
    import numpy as np

    watch, calls, oracle, fired_at = _graph_steps(["nan", "zero", "vanishing", "exploding"], None)
    assert fired_at is None and calls == []
    summary = watch.summary(None, "the program ended")
    assert summary.steps == 40 and watch.steps == 40
    rows = sorted(watch.seen.values(), key=lambda s: s.name)
    assert [s.name for s in rows] == ["b1", "w1", "w2"]
    for col, s in zip((1, 0, 2), rows):
        assert s.steps == 40 and s.had_gradient
        col_norms = oracle[:, col]
        np.testing.assert_allclose(
            [s.first, s.last, s.low, s.high],
            [col_norms[0], col_norms[-1], col_norms.min(), col_norms.max()],
            rtol=1e-5,
        )


def test_a_suspect_graph_step_is_checked_before_its_update_with_the_quiet_history() -> None:
    """A NaN at step 23: that step alone calls Python, and its check sees the 22 quiet steps."""
    import numpy as np

    watch, calls, oracle, fired_at = _graph_steps(["nan", "vanishing", "exploding"], 23)
    assert fired_at == 23 and calls == [23]
    assert watch.fired is not None and watch.fired.condition == "nan" and watch.fired.step == 23
    assert watch.steps == 23 and len(oracle) == 22
    rows = sorted(watch.seen.values(), key=lambda s: s.name)
    for col, s in zip((1, 0, 2), rows):  # the non-finite step counts, but its norm is no extreme
        assert s.steps == 23
        np.testing.assert_allclose([s.low, s.high], [oracle[:, col].min(), oracle[:, col].max()], rtol=1e-5)


def test_a_parquet_record_holds_the_csv_records_rows_and_is_known_as_tfvizs(tmp_path: Path) -> None:
    """The same run recorded both ways: the Parquet file has the CSV's rows, typed (steps as
    integers, an empty cell as null), and a second run may replace it without --force."""
    pq = pytest.importorskip("pyarrow.parquet")
    from tfviz.outputs import written_by_tfviz

    as_csv, as_parquet = tmp_path / "r.csv", tmp_path / "r.parquet"
    for record in (as_csv, as_parquet):
        code, doc = check(str(EXAMPLES / "train_dead_relu.py"), "--until", "zero", "--record", str(record))
        assert code == 1 and doc["watch"]["fired"] == "zero", doc.get("error")
    rows = list(csv.DictReader(line for line in as_csv.read_text().splitlines() if not line.startswith("#")))
    table = pq.read_table(as_parquet)
    assert table.column_names == [
        "step",
        "variable",
        "grad_norm",
        "update_norm",
        "weight_norm",
        "update_to_weight",
    ]
    assert str(table.schema.field("step").type) == "int64" and table.num_rows == len(rows) > 0
    got = table.to_pylist()
    for r, g in zip(rows, got):
        assert g["step"] == int(r["step"]) and g["variable"] == r["variable"]
        for name in ("grad_norm", "update_norm", "weight_norm", "update_to_weight"):
            assert g[name] == (float(r[name]) if r[name] else None), (name, r, g)
    assert written_by_tfviz(str(as_parquet)) and b"tfviz" in table.schema.metadata
    code, _ = check(
        str(EXAMPLES / "train_dead_relu.py"),
        "--until",
        "zero",
        "--max-steps",
        "2",
        "--record",
        str(as_parquet),
    )
    assert code in (0, 1) and pq.read_table(as_parquet).column("step").to_pylist()[-1] <= 2


def test_a_parquet_record_without_pyarrow_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    from tfviz import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a)
    )
    script = tmp_path / "never_run.py"
    script.write_text("open('ran', 'w').write('yes')\n")
    code = cli.main(["check", str(script), "--until", "nan", "--record", str(tmp_path / "r.parquet")])
    assert code == 2 and not (tmp_path / "ran").exists() and not (tmp_path / "r.parquet").exists()
    assert "needs pyarrow" in capsys.readouterr().err
