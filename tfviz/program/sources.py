"""Name a gradient computation's sources as a reader of the program would.

A source is a variable, a Keras variable, or a tensor the program watched.
Its name is the Python expression that holds it where the step was called
(``upper[0]``, ``model.layers[0].kernel``), then Keras' variable path, then
TensorFlow's name.
"""

from __future__ import annotations

import types
from typing import Any

from tfviz.script.discover import FoundVariable, find_variables, iter_objects


def outside_objects(objs: list[Any]) -> list[Any]:
    """Sources as objects that outlive the step: variables stay; a captured
    tensor inside a trace becomes the eager tensor it captures."""
    import tensorflow as tf

    out = []
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
    for o in objs:
        o = getattr(o, "value", o) if not isinstance(o, tf.Variable) and hasattr(o, "path") else o
        if tf.is_tensor(o) and not isinstance(o, tf.Variable) and not hasattr(o, "numpy"):
            o = external.get(id(o))
            if o is None or (o.dtype.name == "resource"):
                continue
        if id(o) in seen:
            continue
        seen.add(id(o))
        out.append(o)
    return out


def name_sources(objs: list[Any], namespace: dict[str, Any]) -> list[FoundVariable]:
    """Name each source as a reader of the program would: the Python
    expression that holds it, then Keras' variable path, then the TF name."""
    mod = types.ModuleType("__main__")
    mod.__dict__.update({k: v for k, v in namespace.items() if not k.startswith("__")})
    named = {id(f.tf_variable): f for f in find_variables(mod)}
    wanted = {id(o) for o in objs}
    paths: dict[int, str] = {}
    for path, obj in iter_objects(mod):
        if id(obj) in wanted and id(obj) not in paths:
            paths[id(obj)] = path
    found = []
    for i, o in enumerate(objs):
        f = named.get(id(o))
        if f is None:
            name = paths.get(id(o)) or _tf_name(o) or f"source[{i}]"
            f = FoundVariable(name, o, o)
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
