"""Program mode on the patterns that used to fail, each checked against TensorFlow.

The corpus (tests/test_corpus.py) checks every program's verdicts; these
tests pin what a user reads for each of those patterns: the names, the
explanation, the norm, the graph and the error message.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, check_json
from tests.test_program_mode import analyzed, ours, theirs, truth
from tfviz.report import FROZEN_REASON
from tfviz.textreport import render

PROGRAMS = ROOT / "tests" / "programs"
CORPUS = PROGRAMS / "corpus"
WGAN = PROGRAMS / "wgan_critic_cancel.py"
TFVIZ = Path(sys.executable).with_name("tfviz")


def test_a_gradient_penalty_source_is_the_tensor_the_step_makes_named_as_the_program_names_it():
    report = analyzed(WGAN, step=1)
    assert [v.name for v in report.variables] == ["interpolated"]
    t = truth(WGAN, step=1)
    assert [s["status"] for s in t["sources"]] == ["connected"]
    assert report.variables[0].status == "connected" and report.variables[0].grad_norm > 0
    # the generator runs before any tape opens: read, but not watched by this tape, and said so
    assert not [v for v in report.variables if v.name.startswith("gen.")]
    gen = [r for r in report.read_not_trained if r.name.startswith("gen.")]
    assert len(gen) == 4 and all("outside the tape opened at" in r.reason for r in gen)
    critic = [r for r in report.read_not_trained if r.name.startswith("critic.")]
    assert len(critic) == 4 and all("separate model" in r.reason for r in critic)
    assert report.graph.ops, "the step has a graph to draw and export"


def test_a_gradient_that_cancels_names_the_op_where_the_parts_meet():
    report = analyzed(WGAN, step=2)
    assert ours(report) == theirs(truth(WGAN, step=2))
    (zero,) = [p for p in report.problems if p.kind == "zero"]
    assert zero.op_type == "Sub" and "cancel" in zero.message
    assert zero.source is not None and "critic(fake)" in zero.source.code  # the line of the Sub
    assert "ReLU" not in zero.hint and "loop body" not in zero.message


def test_a_sparse_gradient_is_measured_as_the_optimizer_applies_it():
    import tensorflow as tf

    report = analyzed(PROGRAMS / "embedding_repeated_ids.py")
    row = next(v for v in report.variables if v.name == "emb.embeddings")
    # TensorFlow's own answer: the same step's IndexedSlices, summed into a dense tensor
    emb = tf.keras.layers.Embedding(10, 4, embeddings_initializer="ones")
    dense = tf.keras.layers.Dense(1, kernel_initializer="ones")
    ids = tf.constant([[1, 1, 1, 2], [1, 3, 3, 3]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(dense(tf.reduce_sum(emb(ids), axis=1)))
    (g,) = tape.gradient(loss, emb.trainable_variables)
    assert isinstance(g, tf.IndexedSlices)
    applied = float(tf.norm(tf.convert_to_tensor(g)))
    assert math.isclose(row.grad_norm, applied, rel_tol=1e-5)
    assert not math.isclose(row.grad_norm, float(tf.norm(g.values)), rel_tol=1e-3)  # the unsummed rows


def test_an_eager_rl_loop_gets_its_graph():
    report = analyzed(CORPUS / "rl_loops_actor_critic.py")
    assert report.traced and len(report.graph.ops) > 50
    assert not [p for p in report.problems if "cannot be traced" in p.message]


def test_a_model_called_before_the_tape_opens_is_outside_the_tape_at_that_line():
    path = CORPUS / "lazy_build_in_tf_function_input_signature.py"
    report = analyzed(path, ("--bug",))
    assert ours(report) == theirs(truth(path, ("--bug",)))
    (p,) = report.problems
    assert p.kind == "outside_tape" and "encoder(x" in p.source.code


def test_a_tensor_the_tape_never_watches_is_said_to_be_unwatched():
    path = CORPUS / "watched_inputs_in_loops_deepdream.py"
    report = analyzed(path, ("--bug",))
    (v,) = report.variables
    assert v.status == "disconnected" and v.kind == "outside_tape"
    assert "tape.watch(img)" in v.explanation
    assert not [p for p in report.problems if p.kind == "other"]


def test_style_transfer_names_the_frozen_network_by_its_layers_and_exports_the_image(tmp_path):
    path = CORPUS / "trained_image_variable_style_transfer.py"
    report = analyzed(path)
    assert report.ok and not report.problems
    # the VGG is frozen (vgg.trainable = False): said so, and in one line of the text report
    assert len(report.read_not_trained) == 8
    assert all(r.reason == FROZEN_REASON and r.name.startswith("extractor.") for r in report.read_not_trained)
    assert all("/" in r.tf_name for r in report.read_not_trained)  # names VGG's layers (block1_conv1)
    assert "  .. 8 weights frozen in Keras (trainable = False), as the script asks: 8 of extractor" in (
        render(report).splitlines()
    )
    svg = tmp_path / "style.svg"
    done = subprocess.run(
        [str(TFVIZ), "export", str(path), "-o", str(svg)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert ">image<" in svg.read_text()


def test_an_exit_2_says_the_real_error_at_the_users_line_not_keras_argument_dump():
    rc, out = check_json(PROGRAMS / "keras_layer_error.py")
    assert rc == 2
    err = out["error"]
    assert "InvalidArgumentError: inputs must be scaled below 0.5" in err["message"]
    assert "•" not in err["message"] and "Arguments received" not in err["message"]
    assert err["line"] == 13 and "assert_less" in err["code"]


def test_a_step_that_finds_no_source_still_names_its_line_in_the_json_error():
    from tfviz.errors import AnalysisError

    path = PROGRAMS / "keras_layer_error.py"
    err = AnalysisError("no source", file=str(path), line=13)
    assert "assert_less" in err.to_dict()["code"]


def test_recompute_grads_inner_gradient_calls_are_part_of_the_outer_step():
    path = CORPUS / "custom_gradient_and_recompute_grad_residual_mlp.py"
    t = truth(path, ("--bug",), step=2)
    report = analyzed(path, ("--bug",), step=2)
    assert ours(report) == theirs(t)
    # the second train step's own call, not one of tf.recompute_grad's inside it
    assert report.target.startswith("train_step, call 2: tape.gradient at")
    starved = {v.name for v in report.variables if v.status == "disconnected"}
    assert starved and all(n.startswith(("blocks[0]", "blocks[1]")) for n in starved)


def test_a_layer_unfrozen_after_its_variables_were_listed_is_never_trained_and_says_where():
    path = CORPUS / "gradient_accumulation_finetune_cnn.py"
    rc, out = check_json(path, "--step", "5", "--", "--bug")
    assert rc == 1
    stale = [p for p in out["problems"] if p["kind"] == "not_trained"]
    assert len(stale) == 4 and all(p["variables"][0].startswith("backbone.") for p in stale)
    assert all(
        "`model.trainable_variables` at gradient_accumulation_finetune_cnn.py:38" in p["message"]
        for p in stale
    )
    assert all("Read model.trainable_variables again" in p["hint"] for p in stale)
    rc, out = check_json(path, "--step", "5")
    assert rc == 0 and not out["problems"]


def test_each_layer_scope_is_named_by_the_layer_keras_opened_it_for(tmp_path):
    """In a fresh process Keras names the layers ``dense``, ``dense_1``, ``dropout``; the
    trace runs them under ``dense_1``, ``dense_1_2``, ``dropout_1``."""
    out = tmp_path / "a.json"
    done = subprocess.run(
        [str(TFVIZ), "export", str(PROGRAMS / "auto_named_layers.py"), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    scopes = json.loads(out.read_text())["graph"]["layer_scopes"]
    assert {k.rsplit("/", 1)[-1]: v for k, v in scopes.items() if "/" in k} == {
        "dense_1": "dense",
        "dense_1_2": "dense_1",
        "dropout_1": "dropout",
    }


def test_predict_inside_the_tape_is_named_at_its_line():
    """TensorFlow gives every weight None: predict() returned NumPy. The report says so at the
    call, once, instead of a bare None and a failed trace; a teacher's predict() is no alarm."""
    path = PROGRAMS / "predict_in_tape.py"
    report = analyzed(path)
    assert ours(report) == theirs(truth(path))
    assert set(ours(report).values()) == {"disconnected"}
    assert all(
        v.kind == "not_read" and f"student.predict() at {path.name}:26" in v.explanation
        for v in report.variables
    )
    (p,) = report.problems
    assert (p.kind, p.severity, p.source.line) == ("not_read", "error", 26)
    assert "student.predict(" in p.source.code and "model(x, training=True)" in p.hint
    assert len(p.variables) == 4 and not report.ok
    # what the step ran is drawn up to the cut: the loss from predict()'s NumPy, no failed trace
    assert report.traced and report.graph.ops
    assert {"Square", "Mean"} <= {o.type for o in report.graph.ops}

    healthy = analyzed(path, ("--teacher",))
    assert ours(healthy) == theirs(truth(path, ("--teacher",)))
    assert healthy.ok and not healthy.problems


def test_a_gradient_asked_of_non_trainable_statistics_is_explained_as_such():
    """TensorFlow gives BatchNormalization's moving statistics None: they are not trainable.
    Said once, as a warning with the fix, apart from variables the target never reads."""
    path = PROGRAMS / "all_variables_bn.py"
    report = analyzed(path)
    assert ours(report) == theirs(truth(path))
    stats = [v for v in report.variables if "moving_" in v.tf_name]
    assert len(stats) == 2 and all(v.status == "disconnected" and v.kind == "not_read" for v in stats)
    assert all("not trainable" in v.explanation and "assignment" in v.explanation for v in stats)
    (p,) = [p for p in report.problems if p.kind == "not_read"]
    assert p.severity == "warning" and sorted(p.variables) == sorted(v.name for v in stats)
    assert "model.trainable_variables, not model.variables" in p.hint


def test_a_variable_a_lambda_layer_uses_is_named_as_never_trained():
    """fit differentiates model.trainable_variables, which TensorFlow's own run shows to leave
    out the Lambda's variable: the loss reads it, training never moves it."""
    path = PROGRAMS / "lambda_variable.py"
    report = analyzed(path)
    mine = ours(report)
    t = theirs(truth(path))
    assert "temperature" not in t and {k: mine[k] for k in t} == t  # fit never asks for it
    (row,) = [v for v in report.variables if v.name == "temperature"]
    assert row.kind == "not_trained" and "Lambda layer `soften`" in row.explanation
    (p,) = [p for p in report.problems if p.kind == "not_trained"]
    assert p.severity == "error" and p.variables == ["temperature"] and "add_weight" in p.hint
    assert not report.ok

    constant = analyzed(path, ("--constant",))
    assert constant.ok and not constant.problems
