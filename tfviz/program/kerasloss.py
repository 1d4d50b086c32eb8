"""A Keras model output that ``compile()`` gives no loss.

With ``loss={"cls": ...}`` and a second output ``"box"``, Keras trains only what reaches
``cls``: the layers that make ``box`` are read by the step and never trained. Keras only
warns ("Gradients do not exist for variables"). The analysis finds those variables not read
by the loss; this says why, at the program's own ``compile`` line.
"""

from __future__ import annotations

import os
from typing import Any

from tfviz.program import hooks
from tfviz.program.sources import base_variable
from tfviz.report import Report
from tfviz.script.discover import FoundVariable
from tfviz.vocabulary import Kind


def outputs_without_loss(model: Any) -> list[str]:
    """The names of ``model``'s outputs that its compiled loss leaves out (a dict or list of
    losses with no entry, or None, for them)."""
    loss = getattr(model, "loss", None)
    names = list(getattr(model, "output_names", None) or [])
    if not names or loss is None:
        return []
    if isinstance(loss, dict):
        return [n for n in names if loss.get(n) is None]
    if isinstance(loss, (list, tuple)) and len(loss) == len(names):
        return [n for n, one in zip(names, loss) if one is None]
    return []


def _output_layer(model: Any, name: str) -> Any:
    """The layer that makes output ``name`` of a functional model."""
    for out_name, tensor in zip(
        getattr(model, "output_names", []) or [], getattr(model, "outputs", []) or []
    ):
        if out_name == name:
            history = getattr(tensor, "_keras_history", None)
            return getattr(history, "operation", None)
    return None


def explain_outputs_without_loss(report: Report, found: list[FoundVariable], capture: Any) -> None:
    """Say, in each ``not_read`` problem that holds an output layer's variables, that the
    output has no loss in ``compile()``, and where that ``compile`` is."""
    model = getattr(capture, "keras_model", None)
    if model is None:
        return
    missing = outputs_without_loss(model)
    if not missing:
        return
    where = hooks.compiled_at.get(model)
    at = f" at {os.path.basename(where.file)}:{where.line}" if where is not None else ""
    paths = {id(base_variable(f.tf_variable)): f.path for f in found}
    for name in missing:
        layer = _output_layer(model, name)
        held = {paths.get(id(base_variable(v))) for v in getattr(layer, "trainable_variables", [])} - {None}
        for p in report.problems:
            if p.kind != Kind.NOT_READ or not held & set(p.variables):
                continue
            ends = p.message.split(". A value taken")[0]
            p.message = (
                f"the model's output '{name}' has no loss in compile(){at}, so the loss never reads"
                f" what it computes and nothing trains the layers that make it: {ends}"
            )
            p.hint = (
                f"Give the output '{name}' a loss in compile() (loss={{..., '{name}': ...}}), or"
                " leave the output out of the model if it is not meant to train."
            )
            if where is not None:
                p.source = where
            for v in report.variables:
                if v.name in p.variables and v.kind == Kind.NOT_READ:
                    v.explanation = f"the model's output '{name}' has no loss in compile(){at}"
