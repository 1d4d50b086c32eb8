"""Variables a step makes anew each time it runs, which training can never update.

A Keras layer constructed inside ``call()`` or a training step, or a ``tf.Variable`` made
inside the step, is new at every call: each step reads weights fresh from their
initializer, and the optimizer's update is lost with them. Under ``tf.function`` TensorFlow
refuses it after the first call ("only supports singleton tf.Variables"). The program's own
first call cannot tell such a variable from a layer built lazily; the step's second run,
tfviz's replay or trace, can: every variable the program keeps exists by then.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any

from tfviz.errors import AnalysisError
from tfviz.report import Source
from tfviz.script.sourcemap import running_user_source, user_source


@contextlib.contextmanager
def variables_made() -> Iterator[list[tuple[Any, Source | None, str]]]:
    """While entered, each ``tf.Variable`` made (eagerly or in a trace; a Keras variable's
    own included) with the innermost user line that made it and, for a Keras layer's
    weight, what it is (``a Dense layer's kernel``)."""
    import tensorflow as tf

    made: list[tuple[Any, Source | None, str]] = []

    def creator(next_creator: Any, **kwargs: Any) -> Any:
        variable = next_creator(**kwargs)
        made.append((variable, running_user_source() or _mapped_source(), _layer_weight(variable)))
        return variable

    with tf.variable_creator_scope(creator):
        yield made


def _layer_weight(variable: Any) -> str:
    """``a Dense layer's kernel`` for the weight of a Keras layer being built, else "": the
    layer the stack builds it in, and the weight's own name."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        owner = frame.f_locals.get("self") if frame.f_code.co_name in ("add_weight", "build") else None
        if owner is not None and hasattr(owner, "built") and hasattr(owner, "add_weight"):
            weight = variable.name.split(":")[0].rsplit("/", 1)[-1]
            return f"a {type(owner).__name__} layer's {weight}"
        frame = frame.f_back
    return ""


def _mapped_source() -> Source | None:
    """The user line of a frame AutoGraph converted (a ``tf.function``'s body runs as
    generated code): TensorFlow's own stack maps it back to the user's file."""
    from tensorflow.python.util import tf_stack

    return user_source(tf_stack.extract_stack())


def refuse_fresh(made: list[tuple[Any, Source | None, str]], what: str, path: str) -> None:
    """Raise for the first trainable variable of ``made`` (each made while tfviz ran the step
    ``what`` again, so new by then): no training step keeps it."""
    fresh = [(v, where, weight) for v, where, weight in made if getattr(v, "trainable", False)]
    if not fresh:
        return
    variable, where, weight = fresh[0]
    label = weight or f"tf.Variable '{variable.name.split(':')[0]}'"
    # tfviz runs the step more than once (a replay, a trace): counted by the line that made them
    lines = {(w.file, w.line) for _, w, _ in fresh if w is not None} - {
        (where.file, where.line) if where else None
    }
    more = f" (and variables at {len(lines)} more line{'s' if len(lines) > 1 else ''})" if lines else ""
    raise AnalysisError(
        f"the {what} creates {label}{more} anew each time it runs, so training never"
        " updates it: every step starts again from a new one (and tf.function refuses it"
        " after its first call); create it once, outside the step: a layer in the model's"
        " __init__, a weight in build(), a variable at module level",
        file=where.file if where else path,
        line=where.line if where else None,
        code=where.code if where else "",
    )
