"""Counting the gradient computations of ``tf.function`` steps that run no Python.

tfviz sees a gradient computation when TensorFlow's entry point
(``tape.gradient``, ``tf.gradients``, ...) runs in Python. A ``tf.function``
runs its Python body only while it is traced; every later call executes the
traced graph, so its gradient calls are never seen. Program mode still has to
reach the N-th computation *that runs*: users ask for ``--step 50`` because
training goes wrong at step 50, with the variables as steps 1 to 49 left them.

So each outermost ``tf.function`` the program calls eagerly is remembered
with the number K of gradient computations its latest trace held (K = 1 for
a usual train step, 2 for a GAN step with two tapes). A call that does not
trace runs that graph again: K more computations. A call that traces counts
the computations its trace holds as they are seen, and is not counted again.

When the requested computation falls inside a call that would only execute
the graph, the call is traced once more instead, on a copy of the Function
(:func:`trace_again`): the copy's trace runs the Python body with this call's
arguments and the variables in their current state, so the gradient call is
seen exactly as on a first call, and the graph is never executed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class CompiledStep:
    """One outermost ``tf.function`` as the program has called it so far."""

    #: the Function itself: held so that its ``id`` is not reused by another
    fn: Any
    #: gradient computations in its latest trace: what each call that does not trace runs
    per_call: int = 0
    #: how many times the program called it (this call included, once :meth:`Steps.called` ran)
    calls: int = 0

    @property
    def name(self) -> str:
        return str(getattr(self.fn, "__name__", None) or getattr(self.fn, "name", "tf.function"))

    def traces(self) -> int:
        """How many graphs TensorFlow holds for it: a change across a call means the call traced."""
        try:
            return int(self.fn.experimental_get_tracing_count())
        except Exception:  # noqa: BLE001 - not a tf.function we know: treat every call as traced
            return -1

    def ran(self, seen: int, traces_before: int) -> int:
        """The call returned after ``seen`` gradient computations were seen in Python.

        Returns how many more it ran unseen: none when it traced (its trace's
        computations were the ones seen, and become what later calls run) or
        ran its Python (``tf.config.run_functions_eagerly``); else ``per_call``.
        """
        if traces_before < 0 or self.traces() != traces_before:
            self.per_call = seen
            return 0
        if seen:
            return 0
        return self.per_call


class Steps:
    """The outermost ``tf.function`` calls of a running program, by Function."""

    def __init__(self) -> None:
        self._known: dict[int, CompiledStep] = {}

    def called(self, fn: Any) -> CompiledStep:
        """Note a call of ``fn`` and return what is known of it."""
        step = self._known.get(id(fn))
        if step is None or step.fn is not fn:
            step = self._known[id(fn)] = CompiledStep(fn)
        step.calls += 1
        return step


def trace_again(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Trace ``fn`` for ``args``/``kwargs`` without running it, on a copy of it.

    A copy, because ``fn`` itself would find its graph for these arguments in
    its cache and trace nothing; ``get_concrete_function``, because the copy's
    graph must never execute: the step is to be captured, not taken.
    """
    import tensorflow as tf

    clone = getattr(fn, "_clone", None)
    if clone is not None:
        copy = clone(python_function=None)
    else:  # pragma: no cover - every TF 2 Function has _clone; kept for a future rename
        copy = tf.function(
            fn.python_function,
            input_signature=fn.input_signature,
            autograph=bool(getattr(fn, "_autograph", True)),
        )
    copy.get_concrete_function(*args, **kwargs)
