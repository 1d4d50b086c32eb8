"""Which Keras layer opened each name scope of a traced graph.

TensorFlow makes a graph's scope names unique: a layer ``dense`` called inside a
``tf.function`` after its lazy build runs under ``dense_1``, the very name of the
next Dense layer, which in turn runs under ``dense_1_2``. No rule on the names
alone can tell these apart; Keras can, when it opens the scope for its layer. So
the trace records, for each scope a layer opens, the layer's own name, and the
graph document carries that map for every view and export to title layers by.

It records the layer's class and the attributes a user sets (units, filters, strides,
padding, activation...) too: the trace keeps none of them, and they are what a user
checks a layer against.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: the attributes of a layer's config worth showing, in this order
ATTRIBUTES = (
    "units",
    "filters",
    "kernel_size",
    "pool_size",
    "strides",
    "dilation_rate",
    "padding",
    "activation",
    "use_bias",
    "num_heads",
    "key_dim",
    "return_sequences",
    "rate",
    "axis",
    "negative_slope",
    "epsilon",
    "momentum",
    "input_dim",
    "output_dim",
    "target_shape",
)
#: a config value longer than this is cut (a user's custom layer may hold anything)
MAX_VALUE = 60

#: the layers being recorded (scope -> layer), while a trace runs
_active: dict[str, Any] | None = None
#: scopes seen for two different layers: nothing trustworthy to say about them
_clashes: set[str] = set()
_installed = False
#: record the scopes layers open while they run eagerly too (their ops are being copied)
_eager = False


@dataclass
class Recorded:
    """What a trace recorded: each scope's layer name, and its class and attributes."""

    names: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)


def _record(scope: str, layer: Any) -> None:
    if _active is None or not scope:
        return
    if _active.setdefault(scope, layer) is not layer:
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
    _originals.append((core.name_scope, "__enter__", original))

    def __enter__(self: Any) -> Any:
        out = original(self)
        if _active is not None and getattr(self, "_pop_on_exit", False):
            caller = getattr(self, "caller", None)
            try:
                if isinstance(getattr(caller, "name", None), str) and (_eager or not tf.executing_eagerly()):
                    _record(tf.get_current_name_scope(), caller)
            except Exception:  # noqa: BLE001 - a title is never worth breaking the user's layer
                pass
        return out

    core.name_scope.__enter__ = __enter__


#: what :func:`install` replaced: (owner, name, the original)
_originals: list[tuple[Any, str, Any]] = []


def mark() -> tuple[int, bool]:
    """Where the wrapping stands now, for :func:`uninstall` to come back to."""
    return len(_originals), _installed


def uninstall(to: tuple[int, bool] = (0, False)) -> None:
    """Put Keras' name scope back as it was at :func:`mark` (an analysis in the caller's own
    process)."""
    global _installed
    while len(_originals) > to[0]:
        owner, name, original = _originals.pop()
        setattr(owner, name, original)
    _installed = to[1]


@contextlib.contextmanager
def recording(eager: bool = False) -> Iterator[Recorded]:
    """Record the layer scopes of the graphs traced inside (with ``eager``, of the ops run
    eagerly too); what is yielded is filled on exit (without the scopes two layers claimed)."""
    global _active, _eager
    install()
    found = Recorded()
    _active, before = {}, _active
    _eager, was_eager = eager, _eager
    _clashes.clear()
    try:
        yield found
    finally:
        recorded, _active = _active or {}, before
        _eager = was_eager
        kept = {s: layer for s, layer in recorded.items() if s not in _clashes}
        found.names.update({s: layer.name for s, layer in kept.items()})
        alike: dict[Any, dict[str, str]] = {}
        found.attributes.update({s: attributes(layer, alike) for s, layer in kept.items()})


def attributes(layer: Any, alike: dict[Any, dict[str, str]] | None = None) -> dict[str, str]:
    """A layer's class and the settings of :data:`ATTRIBUTES` its config holds, as text.
    With ``alike``, a Keras layer whose settings are those of one already read is given
    that one's, not its config read again: a config serializes every initializer, and a
    deep model repeats a few layers hundreds of times.

    >>> class Dense:
    ...     def get_config(self):
    ...         return {"name": "d", "units": 8, "activation": "relu", "kernel_initializer": {}}
    >>> attributes(Dense())
    {'class': 'Dense', 'units': '8', 'activation': 'relu'}
    """
    key = _settings(layer) if alike is not None else None
    if key is not None and alike is not None:
        hit = alike.get(key)
        if hit is None:
            hit = alike[key] = _attributes(layer)
        return dict(hit)
    return _attributes(layer)


def _settings(layer: Any) -> tuple[Any, ...] | None:
    """What a Keras layer's config makes :data:`ATTRIBUTES` of: the layer's attributes of
    those names (Keras' layers keep each setting so, or as ``_num_heads``, or behind a
    property: an LSTM's ``units`` are its cell's). None for a class of another module,
    whose config may say what it likes."""
    cls = type(layer)
    if not getattr(cls, "__module__", "").startswith("keras."):
        return None
    values: list[Any] = [cls]
    for name in ATTRIBUTES:
        try:
            value = getattr(layer, name, _MISSING)
            if value is _MISSING:
                value = getattr(layer, "_" + name, _MISSING)
        except Exception:  # noqa: BLE001 - a property that cannot answer: read the config
            return None
        try:
            hash(value)
        except TypeError:  # a list of dims
            value = repr(value)
        values.append(value)
    return tuple(values)


_MISSING = object()


def _attributes(layer: Any) -> dict[str, str]:
    out = {"class": type(layer).__name__}
    if _is_container(layer):
        return out  # its config is every layer's own (500 Dense layers' for a deep MLP)
    try:
        config = layer.get_config()
    except Exception:  # noqa: BLE001 - a custom layer without a config still has a class
        return out
    if not isinstance(config, dict):
        return out
    for key in ATTRIBUTES:
        if key in config and config[key] is not None:
            text = str(config[key])
            out[key] = text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"
    return out


def _is_container(layer: Any) -> bool:
    """A Keras ``Sequential`` or functional ``Model``: a config of its layers, none of
    :data:`ATTRIBUTES` of its own."""
    try:
        from keras.src.models.functional import Functional
        from keras.src.models.sequential import Sequential
    except ImportError:
        return False
    return isinstance(layer, (Functional, Sequential))


def in_graph(scopes: dict[str, Any], op_scopes: set[str]) -> dict[str, Any]:
    """The recorded scopes that ops of the graph sit in (directly or below them).

    >>> in_graph({"m_1/dense_1": "dense", "m_1/dense": "dense", "x": "x"}, {"m_1/dense_1/MatMul"})
    {'m_1/dense_1': 'dense'}
    """
    held: set[str] = set()
    for s in op_scopes:
        parts = s.split("/")
        held.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return {s: n for s, n in sorted(scopes.items()) if s in held}
