"""Which Keras layer opened each name scope of a traced graph.

TensorFlow makes a graph's scope names unique: a layer ``dense`` called inside a
``tf.function`` after its lazy build runs under ``dense_1``, the very name of the
next Dense layer, which in turn runs under ``dense_1_2``. No rule on the names
alone can tell these apart; Keras can, when it opens the scope for its layer. So
the trace records, for each scope a layer opens, the layer's own name, and the
graph document carries that map for every view and export to title layers by.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

#: the map being recorded (scope -> layer name), while a trace runs
_active: dict[str, str] | None = None
#: scopes seen for two different layers: nothing trustworthy to say about them
_clashes: set[str] = set()
_installed = False


def _record(scope: str, layer: str) -> None:
    if _active is None or not scope:
        return
    if _active.setdefault(scope, layer) != layer:
        _clashes.add(scope)


def install() -> None:
    """Wrap Keras' TensorFlow name scope once per process; a Keras without it is left as is."""
    global _installed
    if _installed:
        return
    _installed = True
    try:
        import tensorflow as tf
        from keras.src.backend.tensorflow import core
    except ImportError:  # not Keras 3 on TensorFlow: titles fall back to the names
        return
    original = core.name_scope.__enter__

    def __enter__(self: Any) -> Any:
        out = original(self)
        if _active is not None and getattr(self, "_pop_on_exit", False):
            name = getattr(getattr(self, "caller", None), "name", None)
            try:
                if isinstance(name, str) and not tf.executing_eagerly():
                    _record(tf.get_current_name_scope(), name)
            except Exception:  # noqa: BLE001 - a title is never worth breaking the user's layer
                pass
        return out

    core.name_scope.__enter__ = __enter__


@contextlib.contextmanager
def recording() -> Iterator[dict[str, str]]:
    """Record the layer scopes of the graphs traced inside; the yielded map is filled on exit
    (without the scopes two layers claimed)."""
    global _active
    install()
    found: dict[str, str] = {}
    _active, before = {}, _active
    _clashes.clear()
    try:
        yield found
    finally:
        recorded, _active = _active, before
        found.update({s: n for s, n in (recorded or {}).items() if s not in _clashes})


def in_graph(scopes: dict[str, str], op_scopes: set[str]) -> dict[str, str]:
    """The recorded scopes that ops of the graph sit in (directly or below them).

    >>> in_graph({"m_1/dense_1": "dense", "m_1/dense": "dense", "x": "x"}, {"m_1/dense_1/MatMul"})
    {'m_1/dense_1': 'dense'}
    """
    held: set[str] = set()
    for s in op_scopes:
        parts = s.split("/")
        held.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return {s: n for s, n in sorted(scopes.items()) if s in held}
