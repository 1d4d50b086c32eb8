"""``--step N`` counts every *execution* of a compiled step, not only its traces.

A ``@tf.function`` train step runs its Python (where tfviz sees the gradient
call) only while it is traced; later calls execute the graph. The N-th
gradient computation is the one TensorFlow runs N-th, with the variables as
the N-1 before it left them. The ground truth is tests/program_truth.py,
which counts executions from inside the graph (a ``numpy_function``) without
tfviz.

tests/programs/dying_relu.py is built so that the step matters: its ReLU is
alive at steps 1 and 2 and dead (exactly zero gradients) from step 3 on.
"""

from __future__ import annotations

import pytest

from tests.conftest import EXAMPLES, ROOT
from tests.test_program_mode import ENTRY, _line_of, analyzed, ours, theirs, truth

RELU = ROOT / "tests" / "programs" / "dying_relu.py"
GAN = EXAMPLES / "program_gan.py"

CASES = {
    # name: (path, args, step)
    "relu_1": (RELU, (), 1),
    "relu_3": (RELU, (), 3),
    # call 4 traces train_step again (a batch of 8 rows): that trace is step 4, counted once
    "relu_4_retrace": (RELU, (), 4),
    "relu_5_after_retrace": (RELU, (), 5),
    "relu_nested_3": (RELU, ("--nested",), 3),
    # two tapes per call: 2c-1 is scale's tape, 2c gate's, in call c
    "two_tapes_3": (RELU, ("--tapes", "2"), 3),
    "two_tapes_4": (RELU, ("--tapes", "2"), 4),
    "two_tapes_6": (RELU, ("--tapes", "2"), 6),
    "gan_3": (GAN, (), 3),
    "gan_4": (GAN, (), 4),
    "entry_tape_3": (ENTRY, ("--api", "tape"), 3),
    "entry_fit_3": (ENTRY, ("--api", "fit"), 3),
    "entry_mirrored_3": (ENTRY, ("--api", "mirrored"), 3),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_nth_execution_verdicts_match_tensorflow(case):
    path, args, step = CASES[case]
    report = analyzed(path, args, step)
    assert report.mode == "program"
    assert ours(report) == theirs(truth(path, args, step))


def test_the_relu_dies_at_step_3_not_before():
    assert analyzed(RELU, step=1).ok and analyzed(RELU, step=2).ok
    report = analyzed(RELU, step=3)
    assert not report.ok
    assert ours(report) == {"scale/kernel": "connected", "gate/kernel": "zero", "gate/bias": "zero"}
    assert {p.kind for p in report.problems} == {"zero"}


def test_target_names_the_call_and_the_tape():
    line = _line_of(RELU, "tape.gradient(loss")
    assert analyzed(RELU, step=3).target == f"train_step, call 3: tape.gradient at dying_relu.py:{line}"
    scale = _line_of(RELU, "scale_tape.gradient(")
    gate = _line_of(RELU, "gate_tape.gradient(")
    third = analyzed(RELU, ("--tapes", "2"), 3)
    fourth = analyzed(RELU, ("--tapes", "2"), 4)
    assert third.target == f"train_step, call 2: tape.gradient at dying_relu.py:{scale}"
    assert fourth.target == f"train_step, call 2: tape.gradient at dying_relu.py:{gate}"
    assert {v.name.split(".")[0] for v in third.variables} == {"scale"}
    assert {v.name.split(".")[0] for v in fourth.variables} == {"gate"}


def test_gan_second_call_takes_generator_then_discriminator():
    third, fourth = analyzed(GAN, step=3), analyzed(GAN, step=4)
    assert {v.name.split(".")[0] for v in third.variables} == {"generator"}
    assert {v.name.split(".")[0] for v in fourth.variables} == {"discriminator"}
    assert third.target.startswith("train_step, call 2: ")


@pytest.mark.parametrize("args,step,total", [((), 9, 8), (("--tapes", "2"), 17, 16)])
def test_step_past_the_end_counts_every_execution(args, step, total):
    from tfviz.analysis.diagnose import analyze
    from tfviz.errors import AnalysisError

    with pytest.raises(AnalysisError) as err:
        analyze(str(RELU), args=list(args), step=step)
    assert (
        f"ran to the end after {total} gradient computation(s); --step {step} asks for more"
        in err.value.message
    )
    assert truth(RELU, args, step)["gradient_computations"] == total


KERAS = ROOT / "tests" / "programs" / "keras_compiled_step.py"


@pytest.mark.parametrize("step", [1, 3])
def test_fit_with_a_compiled_train_step_counts_each_batch(step):
    """Keras runs the model's own ``@tf.function`` train_step batch by batch:
    its graph runs unseen from batch 2 on, and each batch is still one step."""
    report = analyzed(KERAS, (), step)
    assert report.target.startswith(f"Model.fit → Model.train_step, epoch 1, batch {step}: ")
    assert ours(report) == theirs(truth(KERAS, (), step))
    assert report.ok == (step == 1)


def test_fit_with_a_compiled_train_step_past_the_end():
    from tfviz.analysis.diagnose import analyze
    from tfviz.errors import AnalysisError

    with pytest.raises(AnalysisError) as err:
        analyze(str(KERAS), step=9)
    assert "ran to the end after 8 gradient computation(s)" in err.value.message
    assert truth(KERAS, (), 9)["gradient_computations"] == 8


GRAPH_ONLY = (
    ROOT / "tests" / "programs" / "corpus" / ("custom_gradient_and_recompute_grad_lsq_quantized_mlp.py")
)


@pytest.mark.parametrize("step", [2, 4])
def test_a_fit_step_that_runs_only_as_a_graph_counts_each_batch_once(step):
    """Keras traces its graph step twice (the first trace is discarded); the batches that then
    run that graph unseen are one step each, not two (``--step 4`` once diagnosed batch 3)."""
    report = analyzed(GRAPH_ONLY, (), step)
    assert f"epoch 1, batch {step}: " in report.target, report.target
    assert ours(report) == theirs(truth(GRAPH_ONLY, (), step))
