"""TensorFlow's eager fast path, with each variable handed to an op read first in Python.

An eager op given a variable itself (``tf.multiply(v, 2.0)``; a Keras variable's operators,
``self.kernel * 2.0``, hand TensorFlow the variable) reads it in C++, with no op callback: an
op callback sees the op, and a value from nowhere. The eager copy of a step
(:mod:`tfviz.engine.eagerstream`) needs that read as an op of its own, with its own gradient.
The origin recorder only notes which variables an op was handed
(:meth:`tfviz.engine.origins.OriginRecorder.noting_handed_variables`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def reads_in_python(fast_path: Callable[..., Any]) -> Callable[..., Any]:
    """TensorFlow's eager fast path, with each variable handed to an op itself read first,
    as its Python path reads it (``value()``): the fast path reads it in C++ with no op
    callback, and the link from the variable to the op would be lost. Read here,
    the read is an op of its own, and the op then takes the fast path (the Python path
    cost a Dense layer's bias add a third of the layer's eager time)."""
    from tensorflow.python.ops.resource_variable_ops import BaseResourceVariable

    def read(a: Any) -> Any:
        if isinstance(a, BaseResourceVariable):
            return a.value()
        if isinstance(a, (list, tuple)) and any(isinstance(x, BaseResourceVariable) for x in a):
            return type(a)(read(x) for x in a)
        return a

    def fast_path_reading_variables(ctx: Any, op_type: str, name: Any, *args: Any) -> Any:
        for a in args:
            if isinstance(a, BaseResourceVariable) or (
                isinstance(a, (list, tuple)) and any(isinstance(x, BaseResourceVariable) for x in a)
            ):
                return fast_path(ctx, op_type, name, *map(read, args))
        return fast_path(ctx, op_type, name, *args)

    return fast_path_reading_variables
