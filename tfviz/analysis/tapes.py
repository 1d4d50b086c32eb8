"""What the step's own tape watched, and what follows from it for the report.

A tape watches the trainable variables it reads, and only what ``tape.watch`` names when
it is opened with ``watch_accessed_variables=False``; a variable made with
``trainable=False`` it never watches on its own. TensorFlow gives an unwatched variable no
gradient however the loss reads it, so the replay and the trace must watch as the
program's tape did, and the report says why and what to change. A tape that still records
when another one's gradient is taken differentiates through that gradient (second order),
which the report notes.
"""

from __future__ import annotations

import ast
import linecache
import os
from typing import Any

from tfviz.program.capture import loss_scale
from tfviz.program.sources import tape_keys
from tfviz.report import Report, Source
from tfviz.script.discover import FoundVariable
from tfviz.script.scriptinfo import parsed_text
from tfviz.vocabulary import Kind


def not_watched(found: list[FoundVariable], capture: Any) -> dict[int, str]:
    """The sources the step's own tape never watched, by the id of each, with why: a
    variable made with ``trainable=False`` (a tape watches only trainable variables on
    its own), or any variable of a tape opened with ``watch_accessed_variables=False`` that
    was not told to watch it. TensorFlow gives them no gradient however the loss reads them."""
    import tensorflow as tf

    watched = getattr(capture, "watched", None)
    if watched is None:  # no tape (tf.gradients), or not a program's step
        return {}
    automatic = getattr(capture, "tape_watches_accessed", True)
    out: dict[int, str] = {}
    for f in found:
        v = f.tf_variable
        if not isinstance(v, tf.Variable):
            continue
        if not v.trainable:
            # by identity alone: unnamed variables share the name "Variable"
            if not {k for k in tape_keys(v) if not isinstance(k, str)} & watched:
                out[id(f)] = (
                    f"{f.path} is not trainable (trainable=False), so the tape never watches it:"
                    " a tape watches only trainable variables on its own"
                )
        elif not automatic and not tape_keys(v) & watched:
            out[id(f)] = (
                f"the tape was opened with watch_accessed_variables=False and never told to watch"
                f" {f.path} (tape.watch), so it does not follow it"
            )
    return out


def watch_hints(report: Report, found: list[FoundVariable], unwatched: dict[int, str]) -> None:
    """The hint of a problem whose variables the step's tape never watched: the fix is where
    the variable is made, or a ``tape.watch``, not computing it inside the block."""
    variables = {f.path: f for f in found if id(f) in unwatched and not f.tf_variable.trainable}
    told = {f.path for f in found if id(f) in unwatched and f.tf_variable.trainable}
    tensors = {f.path for f in found if not getattr(f.tf_variable, "watched", True)}
    for p in report.problems:
        if p.kind != Kind.OUTSIDE_TAPE or not p.variables:
            continue
        if all(v in told for v in p.variables):
            p.message = (
                "the tape was opened with watch_accessed_variables=False and never told to watch"
                " these variables (tape.watch), so it does not follow them"
            )
            p.hint = (
                "Open the tape without watch_accessed_variables=False, or tell it to watch them"
                " inside the block: tape.watch([v.value for v in model.trainable_variables]) (a Keras"
                " 3 variable holds its tf.Variable as .value)."
            )
        elif all(v in variables for v in p.variables):
            made = variables[p.variables[0]].source
            at = f" ({made.label(os.path.basename)})" if made is not None and made.line else ""
            p.hint = (
                f"Make it trainable where it is made{at}: tf.Variable(..., trainable=True); or, to"
                f" differentiate it while it stays untrained, call tape.watch({p.variables[0]})"
                " inside the `with tf.GradientTape()` block."
            )
        elif all(v in tensors for v in p.variables):
            p.hint = f"Call tape.watch({p.variables[0]}) inside the `with tf.GradientTape()` block."
    # A tape told to watch nothing cuts every variable at its own read: one problem says it.
    merged = [
        p for p in report.problems if p.kind == Kind.OUTSIDE_TAPE and set(p.variables) <= told and p.variables
    ]
    for extra in merged[1:]:
        merged[0].variables.extend(v for v in extra.variables if v not in merged[0].variables)
        report.problems.remove(extra)


def second_order_note(report: Report, capture: Any) -> None:
    """Say so where the step's gradient is taken inside another tape that is still
    recording: that tape differentiates through it, and the step that trains is its own
    gradient call, which ``--step`` reaches."""
    at = getattr(capture, "enclosing_at", None)
    if at is None:
        return
    report.notes.append(
        f"this gradient (computation {capture.count}) is taken while the tape opened at"
        f" {os.path.basename(at.file)}:{at.line} records, and that tape differentiates through"
        " it (second order: MAML's inner step, a gradient penalty, a Hessian-vector product);"
        " the step that trains is that tape's own gradient call, later: pass --step with its"
        " number, counting every gradient computation in the order the program asks for them"
    )


def loss_scale_note(report: Report, capture: Any) -> None:
    """Say by how much the gradients are scaled where the step differentiates a loss its
    LossScaleOptimizer scaled (mixed precision): each ``|grad|`` is what the program's own
    gradient call returns, the loss scale times what the optimizer applies once it unscales."""
    scaler = getattr(capture, "loss_scaler", None)
    scale = loss_scale(scaler) if scaler is not None else None
    if scale is None or scale == 1.0:
        return
    report.notes.append(
        f"the step differentiates its loss scaled by the LossScaleOptimizer (mixed precision), whose"
        f" loss scale is {scale:g} at this step: each |grad| is what the gradient call returns, {scale:g}"
        f" times the gradient the optimizer applies once it unscales them"
    )


def computed_before_tape(made: Source | None, tape_at: Source | None) -> bool:
    """Whether the line ``made`` runs in the step's own loop or function, before the step's
    ``with tf.GradientTape()`` at ``tape_at`` opens: ``pred = model(x)`` just above the tape
    in a training loop's body. What it computes, it computes at every step while the tape
    does not record (the step's cut is the tape's, ``outside_tape``), not once beforehand
    in a layer's ``build()`` or at the script's top (a frozen copy). A script's straight
    top level is not a step's body: a tensor computed there is computed once."""
    if made is None or tape_at is None or made.file != tape_at.file or not 0 < made.line < tape_at.line:
        return False
    tree = parsed_text("".join(linecache.getlines(made.file)))
    if tree is None:
        return False
    body = _innermost_step_body(tree, tape_at.line)
    if body is None:
        return False
    lo, hi = getattr(body, "lineno", 0), getattr(body, "end_lineno", None) or 0
    # in that body, a loop inside it included, but not in a function or class defined there
    return lo <= made.line <= hi and not _defined_inside(body, made.line)


def inside_tape(made: Source | None, tape_at: Source | None) -> bool:
    """Whether the line ``made`` is in the body of the step's ``with tf.GradientTape()`` at
    ``tape_at`` (not in a function or class defined there): what it computes, the tape records,
    and a value read out into Python there is cut by that read, not by the tape."""
    if made is None or tape_at is None or made.file != tape_at.file or made.line <= tape_at.line:
        return False
    tree = parsed_text("".join(linecache.getlines(made.file)))
    if tree is None:
        return False
    block = next(
        (n for n in ast.walk(tree) if isinstance(n, (ast.With, ast.AsyncWith)) and n.lineno == tape_at.line),
        None,
    )
    return block is not None and _spans(block, made.line) and not _defined_inside(block, made.line)


_STEP_BODIES = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _spans(node: ast.AST, line: int) -> bool:
    lo, hi = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    return lo is not None and hi is not None and lo <= line <= hi


def _innermost_step_body(tree: ast.AST, line: int) -> ast.AST | None:
    """The innermost loop or function whose lines hold ``line``; None at a script's top level,
    or in a class's body."""
    found: ast.AST | None = None
    here: ast.AST | None = tree
    while here is not None:
        inner = next((c for c in ast.iter_child_nodes(here) if _spans(c, line)), None)
        if isinstance(inner, ast.ClassDef):
            found = None
        elif isinstance(inner, _STEP_BODIES):
            found = inner
        here = inner
    return found


def _defined_inside(body: ast.AST, line: int) -> bool:
    """Whether ``line`` is in a function, lambda or class defined inside ``body``."""
    return any(isinstance(n, _DEFINITIONS) and n is not body and _spans(n, line) for n in ast.walk(body))
