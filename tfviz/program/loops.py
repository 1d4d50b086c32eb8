"""Loops that hold the replayed step's gradient call, run as Python.

A ``for n in tf.range(steps)`` (DeepDream's gradient ascent, PGD) becomes a
``tf.while_loop`` when traced, and the step's gradient call then sits in the
loop body's graph: its target cannot be the loss of the step's own graph.
While a step is replayed, such a loop is unrolled in the step's graph
instead, one iteration after another, until the replay reaches its gradient
call (and unwinds). An iteration that makes no gradient call shows the step
is not in this loop: the loop's state is put back and it runs as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _unrolling(handler: Any) -> bool:
    import tensorflow as tf

    return bool(getattr(handler, "unroll_loops", False)) and not tf.executing_eagerly()


def _unroll(
    handler: Any,
    iteration: Callable[[int], None],
    bound: int | None,
    get_state: Callable[[], Any],
    set_state: Callable[[Any], None],
) -> bool:
    """Run ``iteration(i)`` for i = 0, 1, ... while each makes a gradient call.

    Returns False (with the state put back) when the first iteration makes
    none; True when the loop ran out (``bound``) without reaching the step.
    """
    state = get_state()
    i = 0
    while bound is None or i < bound:
        before = handler.count
        iteration(i)  # the replay's k-th gradient call unwinds from in here
        if handler.count == before:
            if i == 0:
                set_state(state)
                return False
            return True
        i += 1
    return True


def for_stmt(
    original: Callable[..., Any],
    handler: Any,
    iter_: Any,
    extra_test: Any,
    body: Callable[..., Any],
    get_state: Callable[[], Any],
    set_state: Callable[[Any], None],
    symbol_names: Any,
    opts: Any,
) -> Any:
    import tensorflow as tf

    if not _unrolling(handler) or not tf.is_tensor(iter_) or iter_.shape.rank is None or iter_.shape.rank < 1:
        return original(iter_, extra_test, body, get_state, set_state, symbol_names, opts)
    if not _unroll(handler, lambda i: body(iter_[i]), iter_.shape[0], get_state, set_state):
        return original(iter_, extra_test, body, get_state, set_state, symbol_names, opts)
    return None


def while_stmt(
    original: Callable[..., Any],
    handler: Any,
    test: Callable[[], Any],
    body: Callable[[], Any],
    get_state: Callable[[], Any],
    set_state: Callable[[Any], None],
    symbol_names: Any,
    opts: Any,
) -> Any:
    if not _unrolling(handler):
        return original(test, body, get_state, set_state, symbol_names, opts)
    if not _unroll(handler, lambda i: body(), None, get_state, set_state):
        return original(test, body, get_state, set_state, symbol_names, opts)
    return None
