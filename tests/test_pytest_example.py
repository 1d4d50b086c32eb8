"""The example of ``docs/python-api.md``: gradient checks in a project's own test suite.

Each test points ``tfviz.testing.assert_gradients_flow`` at a training program as it is; the
test fails, naming each variable that would not train, the kind of cut and the line of the
cause, and passes when every variable trains (or is one ``allow`` names as frozen on purpose).
"""

from pathlib import Path

import pytest

import tfviz.testing

PROGRAMS = Path(__file__).resolve().parents[1] / "resources" / "examples"


def test_the_distillation_student_trains():
    # the teacher is read, not trained, and is a separate model: that is not a problem
    report = tfviz.testing.assert_gradients_flow(PROGRAMS / "healthy_distillation.py")
    assert len(report.variables) == 4


def test_a_frozen_copy_in_build_fails_with_its_cause():
    with pytest.raises(AssertionError) as failed:
        tfviz.testing.assert_gradients_flow(PROGRAMS / "seed2_frozen_copy.py")
    # the weight the layer made in build() is trained, not the copy the loss reads
    assert "frozen_copy at" in str(failed.value) and "seed2_frozen_copy.py:" in str(failed.value)


def test_a_teacher_held_by_stop_gradient_may_be_allowed():
    tfviz.testing.assert_gradients_flow(PROGRAMS / "kind_stop_gradient.py", allow=["teacher"])
