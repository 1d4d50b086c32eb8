"""Name a gradient computation's sources as a reader of the program would.

A source is a variable, a Keras variable, or a tensor the program watched.
Its name is the Python expression that holds it where the step was called
(``upper[0]``, ``model.layers[0].kernel``), then Keras' variable path, then
TensorFlow's name.
"""

from __future__ import annotations

import os
import types
from typing import Any

from tfviz.script.discover import FoundVariable, find_variables, held_variable, iter_objects


def outside_objects(
    objs: list[Any], live: bool = False, watched: list[Any] | None = None
) -> list[tuple[Any, Any]]:
    """Sources as ``(object to name it by, what the engine differentiates)``.

    Variables stay themselves. A tensor is a :class:`LiveSource` when
    ``live`` (the gradient call's own sources, so the replay can hand the
    tensor its run makes); named by the eager tensor a trace captured, or by
    itself. Without ``live`` (an exception under a tape) a tensor made inside
    a trace cannot be followed and is left out. ``watched``: the tensors the
    step's tape was told to watch (None: no tape, ``tf.gradients``).
    """
    import tensorflow as tf

    from tfviz.engine.trace import LiveSource

    out: list[tuple[Any, Any]] = []
    external: dict[int, Any] = {}
    try:
        from tensorflow.python.framework import ops

        g = ops.get_default_graph()
        while g is not None and hasattr(g, "captures"):
            for ext, internal in g.captures:
                external.setdefault(id(internal), ext)
            g = getattr(g, "outer_graph", None)
    except Exception:  # noqa: BLE001 - best effort
        pass
    seen: set[int] = set()
    for i, o in enumerate(objs):
        o = getattr(o, "value", o) if not isinstance(o, tf.Variable) and hasattr(o, "path") else o
        if id(o) in seen:
            continue
        seen.add(id(o))
        if tf.is_tensor(o) and not isinstance(o, tf.Variable):
            if o.dtype.name == "resource":
                continue
            named_by = o if hasattr(o, "numpy") else external.get(id(o), o)
            if live:
                seen_by_tape = watched is None or any(w is o for w in watched)
                out.append((named_by, LiveSource(i, o, watched=seen_by_tape)))
            elif named_by is not o or hasattr(o, "numpy"):
                out.append((named_by, named_by))
            continue
        out.append((o, o))
    return out


def name_sources(
    objs: list[Any], namespace: dict[str, Any], local_names: dict[int, str] | None = None
) -> list[FoundVariable]:
    """Name each source as a reader of the program would: the Python
    expression that holds it, then the local variable that holds it where the
    gradient was asked for, Keras' variable path, then the TF name. An item
    may be a pair ``(object to name it by, what the engine differentiates)``."""
    mod = types.ModuleType("__main__")
    mod.__dict__.update({k: v for k, v in namespace.items() if not k.startswith("__")})
    named: dict[int, FoundVariable] = {}
    for fv in find_variables(mod):
        named[id(fv.tf_variable)] = fv
        primary = getattr(fv.tf_variable, "_primary", None)  # a mirrored variable's own copy
        if primary is not None:
            named.setdefault(id(primary), fv)
    pairs = [o if isinstance(o, tuple) else (o, o) for o in objs]
    objs = [o for o, _ in pairs]
    wanted = {id(o) for o in objs}
    paths: dict[int, str] = {}
    for path, obj in iter_objects(mod):
        # a Keras variable stands for the tf.Variable it holds, which is what a tape is given
        for key in (id(obj), id(held_variable(obj))):
            if key in wanted and key not in paths:
                paths[key] = path
    found = []
    for i, o in enumerate(objs):
        f = named.get(id(o))
        if f is None:
            name = paths.get(id(o)) or (local_names or {}).get(id(o)) or _tf_name(o) or f"source[{i}]"
            f = FoundVariable(name, o, pairs[i][1])
        primary = getattr(f.tf_variable, "_primary", None)
        if primary is not None:  # a mirrored variable: the replay reads replica 0's copy
            f.tf_variable = primary
        found.append(f)
    return found


def _tf_name(o: Any) -> str | None:
    for attr in ("path", "name"):
        try:
            value = getattr(o, attr)
        except Exception:  # noqa: BLE001 - eager tensors have no name
            continue
        if isinstance(value, str) and value:
            return value.split(":")[0]
    return None


def base_variable(v: Any) -> Any:
    """The tf.Variable behind a Keras variable; ``v`` itself for anything else.

    Never raises, and never reads a property: a MirroredVariable's ``handle``
    raises outside a replica context, and this runs inside the program's own
    calls (a hook that raises there would break the user's program).
    """
    try:
        value = getattr(v, "value", None)
        return value if value is not None and hasattr(type(value), "handle") else v
    except Exception:  # noqa: BLE001 - a variable that cannot say what it wraps is itself
        return v


def variable_ids(v: Any) -> set[int]:
    """ids of a variable and of the tf.Variable behind it (not its name, which
    many variables share)."""
    return {id(v), id(base_variable(v))}


def tape_keys(v: Any) -> set[Any]:
    """What identifies a variable a tape watched: itself, the variable a mirrored
    one stands for (a replica's tape watches its own copy), and its name."""
    keys: set[Any] = {id(v), id(getattr(v, "value", v))}
    primary = getattr(v, "_primary", None)
    if primary is not None:
        keys.add(id(primary))
    name = getattr(v, "name", None)
    if isinstance(name, str):
        keys.add(name.split(":")[0])
    return keys


def local_names(objs: list[Any]) -> dict[int, str]:
    """The local variable that holds each object in the program's frames on the
    stack, innermost first (``interpolated`` in the function asking for its
    gradient), AutoGraph's copies of them included."""
    import sys

    from tfviz.script.sourcemap import is_user_file

    wanted = {id(o) for o in objs}
    names: dict[int, str] = {}
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and len(names) < len(wanted):
        filename = frame.f_code.co_filename
        if is_user_file(filename) or os.path.basename(filename).startswith("__autograph_generated"):
            for name, value in frame.f_locals.items():
                if id(value) in wanted and id(value) not in names and not name.startswith("_"):
                    names[id(value)] = name
        frame = frame.f_back
    return names
