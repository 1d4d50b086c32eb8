"""A step whose gradients are not finite only because its loss was scaled (mixed precision).

A ``LossScaleOptimizer`` multiplies the loss by its loss scale before the gradient call, so that
small float16 gradients do not underflow; dynamic loss scaling starts the scale high (32768)
and, at a step whose scaled gradients overflow float16 (65504), skips the update and halves the
scale. Such a step's gradients are NaN or infinite as TensorFlow returns them, yet nothing is
wrong: the cause is the scale, not an op's domain. TensorFlow tells the two apart itself: the
step is called once more with its loss unscaled, and where every gradient that was not finite is
finite then, the scale is the cause.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

from tfviz.program.capture import loss_scale
from tfviz.report import Report, VariableReport
from tfviz.vocabulary import Kind, Severity

#: float16's largest finite value: a scaled gradient past it overflows
FLOAT16_MAX = 65504.0


@contextlib.contextmanager
def unscaled(scaler: Any) -> Iterator[None]:
    """While entered, ``scaler``'s ``scale_loss`` hands the loss back as it is (its class's
    method, whatever patch is on it, put back on leaving)."""
    owner: Any = next((c for c in type(scaler).__mro__ if "scale_loss" in vars(c)), None)
    if owner is None:
        yield
        return
    original = vars(owner)["scale_loss"]

    def scale_loss(self: Any, loss: Any) -> Any:
        return loss if self is scaler else original(self, loss)

    owner.scale_loss = scale_loss
    try:
        yield
    finally:
        owner.scale_loss = original


def explain_scaled_overflow(
    report: Report,
    scaler: Any,
    by_name: dict[str, Any],
    unscaled_norms: Callable[[], dict[int, float] | None],
) -> None:
    """Where each variable whose gradient is not finite gets a finite one from the step called
    with its loss unscaled (``unscaled_norms``: TensorFlow's norms then, by the id of each
    tf.Variable; None where that call raised), say that the loss scale is the cause: each ``nan``
    problem becomes a warning, and those variables' explanations say so. The verdict stays
    TensorFlow's: the gradients the step returned are not finite, and the report is not ok.
    ``by_name``: each variable report's tf.Variable, by the report's name."""
    if scaler is None:
        return
    nan = [v for v in report.variables if v.kind == Kind.NAN]
    scale = loss_scale(scaler)
    if not nan or scale is None or scale <= 1.0:
        return
    norms = unscaled_norms()
    if norms is None:
        return
    plain: dict[str, float] = {}
    for v in nan:
        tf_var = by_name.get(v.name)
        norm = norms.get(id(tf_var)) if tf_var is not None else None
        if norm is None or not math.isfinite(norm):
            return  # a gradient not finite unscaled too: an op's domain, said as it is
        plain[v.name] = norm
    for v in nan:
        v.explanation = _explained(v, scale, plain[v.name])
    problems = [p for p in report.problems if p.kind == Kind.NAN and p.severity == Severity.ERROR]
    for p in problems:
        if not set(p.variables) <= set(plain):
            continue
        where = f" at {p.op_type} '{p.op.rsplit('/', 1)[-1]}'" if p.op and p.op_type else ""
        p.severity = Severity.WARNING
        p.message = (
            f"the gradient is not finite only because the loss is scaled by {scale:g} (a"
            f" LossScaleOptimizer, mixed precision): called again with its loss unscaled, the step's"
            f" gradients are finite. A scaled gradient past float16's {FLOAT16_MAX:g} overflows{where};"
            f" the LossScaleOptimizer skips this step's update and halves its loss scale, as"
            f" dynamic loss scaling does"
        )
        p.hint = (
            "Nothing to fix where later steps are finite (tfviz check --step N looks at a later"
            " one). Where every step overflows, start the scale lower"
            " (LossScaleOptimizer(..., initial_scale=...))."
        )


def _explained(v: VariableReport, scale: float, norm: float) -> str:
    return (
        f"its gradient is not finite only because the loss is scaled by {scale:g} (mixed precision):"
        f" with the loss unscaled it is {norm:.3g}; the LossScaleOptimizer skips this step's update"
    )
