"""Find targets and trainable variables in a loaded script's globals.

Each variable gets the Python path it was found at (``upper[0]``,
``model.layers[0].kernel``), which is how users name it in their own code.
"""

from __future__ import annotations

import functools
import inspect
import re
import types
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tfviz.errors import AnalysisError
from tfviz.report import Source

_MAX_DEPTH = 6
#: Containers are walked up to this many items: a variable is not the 100,001st
#: element of a list, and a list of three million floats must not be walked.
_MAX_CHILDREN = 10_000
_PEEK = 32
_PLAIN = (int, float, complex, bool, str, bytes, type(None))
#: Whether the walk yields plain values too (a layer's settings: half of what it met in
#: ResNet50, 2,900 of 5,750 objects). None of its readers asks about one: they look for
#: variables, tensors and their owners. Walking them is the slow twin (``tests/test_discover.py``).
WALK_LEAVES = False


def _plain_data(items: Any) -> bool:
    """A container whose first items are plain numbers or strings holds data, not models.

    >>> _plain_data([0.5] * 1000), _plain_data([0.5, object()]), _plain_data([])
    (True, False, False)
    """
    head = items[:_PEEK]
    return bool(head) and all(isinstance(x, _PLAIN) for x in head)


@dataclass
class FoundVariable:
    path: str
    variable: Any  # the user-facing object (tf.Variable or keras Variable)
    tf_variable: Any  # the tf.Variable behind it
    source: Source | None = None  # the user's line that created it, when known


def is_tf_function(obj: Any) -> bool:
    return hasattr(obj, "python_function") and hasattr(obj, "get_concrete_function")


def _required_args(fn: Any) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in sig.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def find_targets(module: types.ModuleType) -> dict[str, Any]:
    """Zero-argument functions and tf.functions defined at the script's top level."""
    out: dict[str, Any] = {}
    for name, obj in vars(module).items():
        if name.startswith("_"):
            continue
        fn = obj.python_function if is_tf_function(obj) else obj
        if not isinstance(fn, types.FunctionType):
            continue
        if getattr(fn, "__module__", None) != module.__name__:
            continue
        if not _required_args(fn):
            out[name] = obj
    return out


def pick_target(module: types.ModuleType, wanted: str | None, path: str) -> tuple[str, Any]:
    targets = find_targets(module)
    if wanted:
        if wanted in targets:
            return wanted, targets[wanted]
        obj = getattr(module, wanted, None)
        if obj is not None:
            fn = obj.python_function if is_tf_function(obj) else obj
            args = _required_args(fn) if callable(fn) else []
            if args:
                raise AnalysisError(
                    f"target '{wanted}' takes arguments ({', '.join(args)}); a target must be"
                    " callable with none. Wrap it: def loss(): return "
                    f"{wanted}(...)",
                    file=path,
                    line=_line_of(fn),
                )
            raise AnalysisError(f"'{wanted}' is not a function defined in the script", file=path)
        raise AnalysisError(
            f"no target named '{wanted}'. Candidates: {', '.join(sorted(targets)) or 'none'}",
            file=path,
            candidates=tuple(sorted(targets)),
        )
    if "loss" in targets:
        return "loss", targets["loss"]
    if len(targets) == 1:
        return next(iter(targets.items()))
    if not targets:
        raise AnalysisError(
            "no target found: define a function with no arguments that returns the loss"
            " (for example `def loss(): return tf.reduce_mean(...)`)",
            file=path,
        )
    raise AnalysisError(
        "several targets and none is called 'loss'; choose one with --target NAME."
        f" Candidates: {', '.join(sorted(targets))}",
        file=path,
        candidates=tuple(sorted(targets)),
    )


def _line_of(fn: Any) -> int | None:
    code = getattr(fn, "__code__", None)
    return code.co_firstlineno if code else None


def _tf_variable_of(obj: Any) -> Any | None:
    """The trainable tf.Variable behind ``obj``, or None."""
    if type(obj) in _LEAVES:  # most of what a walk of a model meets: its settings
        return None
    keras_variable, tf_variable = _variable_types()
    if keras_variable is not None and isinstance(obj, keras_variable):
        return held_variable(obj) if obj.trainable else None
    if isinstance(obj, tf_variable):
        return obj if obj.trainable else None
    return None


_LEAVES = frozenset({type(None), bool, int, float, str, bytes})


def held_variable(obj: Any) -> Any | None:
    """The tf.Variable a Keras variable holds, trainable or not (a BatchNormalization's
    moving statistics among them); None for anything else."""
    if type(obj) in _LEAVES:
        return None
    keras_variable, tf_variable = _variable_types()
    if keras_variable is None or not isinstance(obj, keras_variable):
        return None
    value = getattr(obj, "value", None)
    return value if isinstance(value, tf_variable) else None


@functools.cache
def _variable_types() -> tuple[Any, Any]:
    """Keras' variable class (None without Keras) and TensorFlow's."""
    import tensorflow as tf

    try:
        import keras
    except ImportError:  # pragma: no cover
        return None, tf.Variable
    return keras.Variable, tf.Variable


def iter_objects(module: types.ModuleType) -> Iterator[tuple[str, Any]]:
    """Breadth-first walk of the script's globals, yielding (python path, object).

    Descends into lists, tuples, dicts, Keras layers and models, tf.Modules
    and instances of classes the script defines; each object is visited once. Plain values
    (numbers, strings, None) are not yielded (:data:`WALK_LEAVES`).
    """
    import tensorflow as tf

    try:
        import keras

        layer_types: tuple[type, ...] = (keras.layers.Layer,)
    except ImportError:  # pragma: no cover
        layer_types = ()
    seen: set[int] = set()
    skip: frozenset[type] = frozenset() if WALK_LEAVES else _LEAVES
    queue: deque[tuple[str, Any, int]] = deque(
        (name, obj, 0)
        for name, obj in vars(module).items()
        if not name.startswith("__") and not isinstance(obj, types.ModuleType) and type(obj) not in skip
    )
    while queue:
        path, obj, depth = queue.popleft()
        first = id(obj) not in seen
        seen.add(id(obj))
        yield path, obj  # every path to an object, so callers can pick the best name
        if not first or depth >= _MAX_DEPTH or isinstance(obj, (str, bytes, int, float, type)):
            continue
        children: list[tuple[str, Any]] = []
        if isinstance(obj, (list, tuple)):
            if not _plain_data(obj):
                children = [
                    (f"{path}[{i}]", v) for i, v in enumerate(obj[:_MAX_CHILDREN]) if type(v) not in skip
                ]
        elif isinstance(obj, dict):
            if not _plain_data(list(obj.values())[:_PEEK]):
                children = [
                    (f"{path}[{k!r}]", v) for k, v in list(obj.items())[:_MAX_CHILDREN] if type(v) not in skip
                ]
        elif layer_types and isinstance(obj, layer_types):
            # Named attributes first, so a sub-model is reached as gan.generator, not gan.layers[0].
            children += _attributes(path, obj, skip)
            if hasattr(obj, "layers") and isinstance(getattr(obj, "layers", None), list):
                children += [(_sublayer_path(path, i, v), v) for i, v in enumerate(obj.layers)]
        elif isinstance(obj, tf.Module) or _user_instance(obj, module):
            children += _attributes(path, obj, skip)
        queue.extend((p, v, depth + 1) for p, v in children)


def _sublayer_path(path: str, i: int, layer: Any) -> str:
    """``model.get_layer("z_mean")`` for a layer the program named, else ``model.layers[i]``.

    >>> class Dense: name = "z_mean"
    >>> _sublayer_path("encoder", 5, Dense())
    'encoder.get_layer("z_mean")'
    >>> Dense.name = "dense_3"
    >>> _sublayer_path("encoder", 5, Dense())
    'encoder.layers[5]'
    """
    name = getattr(layer, "name", None)
    if isinstance(name, str) and name and not auto_named(name, type(layer).__name__):
        return f'{path}.get_layer("{name}")'
    return f"{path}.layers[{i}]"


def auto_named(name: str, class_name: str) -> bool:
    """Keras made the name from the class (``dense``, ``conv2d_3``, ``vi_t_distilled_1``).

    >>> auto_named("vi_t_distilled_1", "ViTDistilled"), auto_named("z_mean", "Dense")
    (True, False)
    """
    snake = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", class_name)).lower()
    loose = re.sub(r"_\d+$", "", name)
    return loose in (snake, class_name.lower()) or loose.replace("_", "") == class_name.lower()


def _attributes(path: str, obj: Any, skip: frozenset[type] = frozenset()) -> list[tuple[str, Any]]:
    """``obj``'s attributes a user could name, as (Python path, value), less those whose
    type is in ``skip``."""
    out = []
    cls: Any = type(obj)
    for name, value in list(getattr(obj, "__dict__", {}).items()):
        if type(value) in skip or isinstance(value, _NOT_CHILDREN):
            continue
        public = _public_name(cls, name) if name.startswith("_") else name
        if public:
            out.append((f"{path}.{public}", value))
    return out


_NOT_CHILDREN = (types.ModuleType, types.FunctionType, types.MethodType)


@functools.cache
def _public_name(cls: Any, name: str) -> str:
    """The name a user writes for private attribute ``name`` of ``cls``, or "" for private
    state to skip: Keras keeps weights as ``_kernel`` behind a ``kernel`` property. Once
    per class and name: a model's layers share a few classes, and each has dozens."""
    public = name.lstrip("_")
    if public and isinstance(getattr(cls, public, None), property):
        return public
    return "trainable_weights" if name == "_trainable_variables" else ""


def _user_instance(obj: Any, module: types.ModuleType) -> bool:
    return getattr(type(obj), "__module__", None) == module.__name__


_POSITION = re.compile(r"\[\d+\]$")


def name_rank(path: str, scoped: bool = False) -> int:
    """How readable a variable's name is; lower is better.

    0: a named attribute or key (``gen.layers[2].kernel``, ``w``, ``params['w']``);
    1: a Keras path (``disc/d_conv1/kernel``, ``scoped``), used instead of a
    position in a module-level list; 2: a position in an object's own list
    (``layer.trainable_variables[0]``); 3: a position in a module-level list
    (``all_trainable[7]``), which says nothing about what the variable is.

    >>> [name_rank(p) for p in ("gen.layers[2].kernel", "layer.weights[0]", "all_vars[3]")]
    [0, 2, 3]
    """
    if scoped:
        return 1
    if not _POSITION.search(path):
        return 0
    return 2 if "." in path else 3


def _keras_path(obj: Any) -> str | None:
    """A Keras variable's layer-scoped path (``disc/d_conv1/kernel``), if it has one."""
    path = getattr(obj, "path", None)
    return path if isinstance(path, str) and "/" in path else None


def holders(path: str) -> list[str]:
    """The paths of the objects that hold the one at ``path`` (a path of the walk), outermost
    first.

    >>> holders("model.layers[1].kernel")
    ['model', 'model.layers', 'model.layers[1]']
    """
    return [path[: m.start()] for m in re.finditer(r"[.\[]", path) if m.start()]


class ObjectWalk:
    """One walk of the script's objects (:func:`iter_objects`), taken when first asked
    and shared by all who ask after the step ran: finding the variables, naming the
    tensors a step captured, and finding a variable's owners each walked a large
    model's every layer again."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self._pairs: list[tuple[str, Any]] | None = None
        self._at: dict[str, Any] | None = None

    def pairs(self) -> list[tuple[str, Any]]:
        """Every (Python path, object) of the walk, in its order."""
        if self._pairs is None:
            self._pairs = list(iter_objects(self.module))
        return self._pairs

    def at(self, path: str) -> Any:
        """The object the walk first reached by ``path``, or None."""
        if self._at is None:
            self._at = {}
            for p, obj in self.pairs():
                self._at.setdefault(p, obj)
        return self._at.get(path)


def frozen_variables(walk: ObjectWalk) -> dict[int, tuple[str, str]]:
    """The TensorFlow variables behind Keras variables that Keras holds frozen (a layer's
    after ``layer.trainable = False``), by id, each with the Python path the walk first
    reached it by and Keras' own path of it (``dense/kernel``, which names its layer).

    Keras freezes its own variable only: the TensorFlow variable inside stays trainable, so
    a tape still watches it and a step reads it, though no training step on
    ``trainable_variables`` ever differentiates it.
    """
    keras_variable, tf_variable = _variable_types()
    if keras_variable is None:
        return {}
    frozen: dict[int, tuple[str, str]] = {}
    for path, obj in walk.pairs():
        if isinstance(obj, keras_variable) and not obj.trainable:
            value = getattr(obj, "value", None)
            if isinstance(value, tf_variable) and value.trainable and id(value) not in frozen:
                frozen[id(value)] = (path, str(getattr(obj, "path", "") or value.name.split(":")[0]))
    return frozen


def find_variables(module: types.ModuleType, walk: ObjectWalk | None = None) -> list[FoundVariable]:
    """Trainable variables reachable from the script's globals, in walk order (``walk``,
    where one of ``module`` was taken already).

    A variable reachable by several paths gets the most readable name (see
    ``name_rank``); among equals, the shortest path, which the walk finds first.
    """
    best: dict[int, tuple[tuple[int, int], FoundVariable]] = {}
    for path, obj in walk.pairs() if walk is not None else iter_objects(module):
        tfv = _tf_variable_of(obj)
        if tfv is None:
            continue
        rank = name_rank(path)
        keras_path = _keras_path(obj) if rank == 3 else None
        if keras_path:
            path, rank = keras_path, name_rank(keras_path, scoped=True)
        # Among equally readable paths, one through attribute names
        # (gan.discriminator.layers[0]) beats one through layer positions (gan.layers[1].layers[0]).
        key = (rank, path.count(".layers[") + path.count(".get_layer("))
        old = best.get(id(tfv))
        if old is None or key < old[0]:
            best[id(tfv)] = (key, FoundVariable(path, obj, tfv))
    return [f for _key, f in best.values()]


def tf_name(found: FoundVariable) -> str:
    path = getattr(found.variable, "path", None)
    if isinstance(path, str):
        return path
    return str(getattr(found.tf_variable, "name", found.path))


def var_node(f: FoundVariable) -> str:
    """The graph node id of a variable."""
    return f"var:{f.path}"
