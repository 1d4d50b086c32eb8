"""Layers frozen with ``layer.trainable = False``: their weights are read, never trained.

Keras freezes its own variable; the TensorFlow variable inside stays trainable, so a tape
watches it. Transfer learning, as Keras' guide writes it, froze a whole base model and
tfviz listed each of its weights as read but not trained (156 lines for MobileNetV2), and
in ``loss()`` mode reported them as sources a training step never differentiates. Checked
against TensorFlow: the step's own gradients, and a tape over ``trainable_variables``.
"""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

from tests.conftest import ROOT
from tests.test_commands import tfviz
from tests.test_program_mode import analyzed, ours, theirs, truth
from tfviz.report import FROZEN_REASON
from tfviz.textreport import render

FROZEN = ROOT / "tests" / "programs" / "frozen"


def test_a_fit_program_over_a_frozen_base_checks_the_head_and_says_the_base_is_frozen_in_one_note():
    path = FROZEN / "fit_frozen_base.py"
    report = analyzed(path)
    assert ours(report) == theirs(truth(path))
    assert [v.name for v in report.variables] == [
        'model.get_layer("head").kernel',
        'model.get_layer("head").bias',
    ]
    assert report.ok
    # kept as data (the window's layer tree names base's layers by them), said as frozen
    assert {(r.name, r.reason) for r in report.read_not_trained} == {
        (f"base.layers[{i}].{w}", FROZEN_REASON) for i in (0, 1) for w in ("kernel", "bias")
    }
    # Keras' paths, which name base's layers (numbered per process: dense, dense_1, ...)
    assert all(re.fullmatch(r"base/dense(_\d+)?/(kernel|bias)", r.tf_name) for r in report.read_not_trained)
    lines = render(report).splitlines()
    assert "  .. 4 weights frozen in Keras (trainable = False), as the script asks: 4 of base" in lines
    assert not [ln for ln in lines if ln.startswith("  .. base.")]  # one line, not one per weight


def test_a_loss_over_a_frozen_base_differentiates_what_a_training_step_would(tmp_path):
    """Through the installed command; the oracle is a tape over the models' trainable
    variables, the list a training step passes (the head is built by the first call)."""
    import tensorflow as tf

    path = FROZEN / "loss_frozen_base.py"
    done = tfviz("check", str(path), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    script = runpy.run_path(str(path))
    script["loss"]()
    trainable = script["base"].trainable_variables + script["head"].trainable_variables
    with tf.GradientTape() as tape:
        value = script["loss"]()
    grads = tape.gradient(value, trainable)
    assert len(trainable) == 2 and all(g is not None for g in grads)
    assert [v["name"] for v in report["variables"]] == ["head.kernel", "head.bias"]
    assert [v["status"] for v in report["variables"]] == ["connected", "connected"]
    assert [(r["name"], r["reason"]) for r in report["read_not_trained"]] == [
        (f"base.layers[{i}].{w}", FROZEN_REASON) for i in (0, 1) for w in ("kernel", "bias")
    ]
    assert len(tape.watched_variables()) == 6  # the tape itself watches the frozen four too


def _run_and_compare(path: Path, names: list[str]) -> dict[str, bool]:
    """Run the program as Python runs it, in two parts: up to its training (the first line
    that starts a loop or a fit), then the rest. For each model named, whether the training
    changed any of its weights: Keras' own answer."""
    lines = path.read_text().splitlines()
    cut = min(i for i, ln in enumerate(lines) if ln.startswith(("for ", "model.fit")))
    script: dict = {"__name__": "__main__"}
    exec(compile("\n".join(lines[:cut]), str(path), "exec"), script)  # noqa: S102 - as python runs it
    before = {name: [w.numpy().copy() for w in script[name].weights] for name in names}
    exec(compile("\n" * cut + "\n".join(lines[cut:]), str(path), "exec"), script)  # noqa: S102
    return {
        name: any((b != w.numpy()).any() for b, w in zip(before[name], script[name].weights))
        for name in names
    }


def test_a_discriminator_frozen_after_its_compile_is_said_to_train_nothing_in_its_own_call():
    path = FROZEN / "gan_frozen_at_compile.py"
    changed = _run_and_compare(path, ["disc", "gen"])
    assert changed == {"disc": False, "gen": True}  # Keras 3 trains the generator only
    report = analyzed(path)
    assert ours(report) == theirs(truth(path))
    assert not report.ok
    (p,) = [p for p in report.problems if p.kind == "not_trained"]
    call = next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if "disc.train_on_batch" in ln)
    assert p.severity == "error" and p.source is not None and p.source.line == call
    assert p.message.startswith(f"disc.train_on_batch at gan_frozen_at_compile.py:{call} trains nothing")
    assert "its 4 weights are frozen" in p.message and "disc.trainable = True" in p.hint
    assert p.variables == [f"disc.layers[{i}].{w}" for i in (0, 1) for w in ("kernel", "bias")]


def test_a_fit_on_a_model_with_nothing_to_train_says_why_no_gradient_was_computed(tmp_path):
    path = FROZEN / "fit_frozen_model.py"
    assert _run_and_compare(path, ["model"]) == {"model": False}
    done = tfviz("check", str(path), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    fit = next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if ln.startswith("model.fit"))
    assert "the program ran to the end without computing a gradient" in done.stderr
    assert (
        f"model.fit at fit_frozen_model.py:{fit} trains nothing: model has no trainable weights"
        in done.stderr
    )
