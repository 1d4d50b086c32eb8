"""Keras keeps its global settings per thread; the program's go with its step.

The program runs in a thread of its own (see :mod:`tfviz.program.launch`),
and the analysis replays its step in another. Keras 3 stores what a program
sets globally (``mixed_precision.set_global_policy``, ``utils.set_random_seed``,
custom objects, its layer-name counters) in a ``threading.local``, so the
replaying thread would not see them. What is a setting crosses over; what
describes where the program stood (the scopes and the call it was in) does not.
"""

from __future__ import annotations

from typing import Any

#: Keras' per-thread attributes that describe a call in progress, not a setting
_TRANSIENT = ("scope", "current_call_ctx", "name_scope_stack", "uninitialized_variables")


def _tracker() -> Any:
    try:
        from keras.src.backend.common import global_state
    except ImportError:  # pragma: no cover - Keras ships with TensorFlow
        return None
    return global_state.GLOBAL_STATE_TRACKER


def settings() -> dict[str, Any]:
    """This thread's Keras settings.

    >>> isinstance(settings(), dict)
    True
    """
    tracker = _tracker()
    if tracker is None:  # pragma: no cover
        return {}
    return {k: v for k, v in vars(tracker).items() if not any(t in k for t in _TRANSIENT)}


def adopt(values: dict[str, Any]) -> None:
    """Make ``values`` this thread's Keras settings too."""
    tracker = _tracker()
    if tracker is None:  # pragma: no cover
        return
    for key, value in values.items():
        setattr(tracker, key, value)
