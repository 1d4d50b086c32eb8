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
from collections.abc import Iterator
from typing import Any

from tfviz.errors import AnalysisError
from tfviz.report import Source
from tfviz.script.sourcemap import running_user_source, user_source


@contextlib.contextmanager
def variables_made() -> Iterator[list[tuple[Any, Source | None]]]:
    """While entered, each ``tf.Variable`` made (eagerly or in a trace; a Keras variable's
    own included) with the innermost user line that made it."""
    import tensorflow as tf

    made: list[tuple[Any, Source | None]] = []

    def creator(next_creator: Any, **kwargs: Any) -> Any:
        variable = next_creator(**kwargs)
        made.append((variable, running_user_source() or _mapped_source()))
        return variable

    with tf.variable_creator_scope(creator):
        yield made


def _mapped_source() -> Source | None:
    """The user line of a frame AutoGraph converted (a ``tf.function``'s body runs as
    generated code): TensorFlow's own stack maps it back to the user's file."""
    from tensorflow.python.util import tf_stack

    return user_source(tf_stack.extract_stack())


def refuse_fresh(made: list[tuple[Any, Source | None]], known: set[int], what: str, path: str) -> None:
    """Raise for the first trainable variable of ``made`` that is not one of ``known``
    (ids): the step ``what`` made it again, so no training step keeps it."""
    fresh = [(v, where) for v, where in made if getattr(v, "trainable", False) and id(v) not in known]
    if not fresh:
        return
    variable, where = fresh[0]
    label = variable.name.split(":")[0]
    # tfviz runs the step more than once (a replay, a trace): counted by the line that made them
    lines = {(w.file, w.line) for _, w in fresh if w is not None} - {
        (where.file, where.line) if where else None
    }
    more = f" (and variables at {len(lines)} more line{'s' if len(lines) > 1 else ''})" if lines else ""
    raise AnalysisError(
        f"the {what} creates tf.Variable '{label}'{more} each time it runs, so training never"
        " updates it: every step starts again from a new one (and tf.function refuses it"
        " after its first call); create it once, outside the step: a layer in the model's"
        " __init__, a weight in build(), a variable at module level",
        file=where.file if where else path,
        line=where.line if where else None,
        code=where.code if where else "",
    )
