"""The variables an analysis in the caller's process writes, each saved before its first write,
so that :func:`tfviz.api.untouched` can put them back.

Saving every live variable first meant finding them among all the process's objects: a
notebook's heap holds a third of a million for a ResNet50, and the scan and the reads cost
0.05 s of each check. Only what runs can write, though, and everything TensorFlow runs
eagerly passes its three entry points (the generated ops' fast path, the slow path, and a
``tf.function``'s call, which is handed the variables it captures). While
:class:`WrittenVariables` is entered, an op that takes a resource and may write it (any such
op but the known reads) first has each resource it is handed read, once, by the C API
itself: no op callback sees that read and no tape records it, so the step tfviz copies never
holds it. The slow twin is :func:`every_live_variable`, the scan: ``tests/test_api.py`` holds
the two to the same values on every bundled example and on training steps
(``tests/programs/api/written.py``).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any

#: ops that take a resource and only read it: no value of theirs needs saving
READ_ONLY = frozenset(
    {
        "ReadVariableOp",
        "VariableShape",
        "VarIsInitializedOp",
        "ResourceGather",
        "ResourceGatherNd",
        "DestroyResourceOp",
        "_ReadVariablesOp",
    }
)

#: op type (or a function's name) -> whether it may write a resource it is handed: op
#: definitions do not change while the process lives, so every check shares the answers
_MAY_WRITE: dict[Any, bool] = {}

#: whether :func:`tfviz.api.untouched` saves the variables as they are first written (this
#: module) or every live variable up front (:func:`every_live_variable`, the slow twin)
SAVE_AS_WRITTEN = True


class WrittenVariables:
    """While entered, saves each resource variable's value before the first op that may
    write it runs; :meth:`restore` puts the values back, the first saved last (a variable
    met twice, through two handle tensors, gets its value from before either)."""

    def __init__(self) -> None:
        #: id(handle) -> (the handle, its value before the first write; None where it has
        #: no value to read: not a variable, not initialized, made by the analysis itself)
        self.saved: dict[int, tuple[Any, Any]] = {}
        #: id(handle) -> a weak reference to a handle an op of the analysis has read: it holds
        #: a value, which its first write need not ask about (``VarIsInitializedOp``, most
        #: of a save: 0.005 s of a ResNet50 check, 0.014 s of a process's first, where
        #: TensorFlow makes that op's kernel for each batch norm statistic)
        self._read_handles: dict[int, Any] = {}
        self._patched: list[tuple[str, Any]] = []

    def __enter__(self) -> WrittenVariables:
        from tensorflow.python import pywrap_tfe
        from tensorflow.python.eager import context
        from tensorflow.python.framework import dtypes, op_def_registry
        from tensorflow.python.ops.resource_variable_ops import BaseResourceVariable

        execute = pywrap_tfe.TFE_Py_Execute
        resource, variable = dtypes.resource, BaseResourceVariable
        saved, may_write_of, read_handles = self.saved, _MAY_WRITE, self._read_handles

        def may_write(op_type: Any) -> bool:
            known = may_write_of.get(op_type)
            if known is None:
                name = op_type.decode() if isinstance(op_type, bytes) else str(op_type)
                op_def = op_def_registry.get(name)
                known = may_write_of[op_type] = (
                    True  # a function's call: handed the resources it captures
                    if op_def is None
                    else name not in READ_ONLY and any(a.type == resource for a in op_def.input_arg)
                )
            return known

        def save(values: Any) -> None:
            for a in values:
                if isinstance(a, variable):
                    a = a.handle
                elif isinstance(a, (list, tuple)):
                    save(a)
                    continue
                if getattr(a, "dtype", None) is not resource or id(a) in saved:
                    continue
                # read by an op of the analysis already: a value is there to read
                was_read = read_handles.get(id(a))
                value = _read(execute, context.context(), a, was_read is not None and was_read() is a)
                # another thread's op may have saved it since: the first value stays
                saved.setdefault(id(a), (a, value))

        def fast_path(original: Callable[..., Any]) -> Callable[..., Any]:
            def saving_fast_path(ctx: Any, op_type: Any, name: Any, *args: Any) -> Any:
                known = may_write_of.get(op_type)  # each op of a step asks: the dictionary first
                if known or (known is None and may_write(op_type)):
                    save(args)
                out = original(ctx, op_type, name, *args)
                if op_type == "ReadVariableOp" and args and id(args[0]) not in read_handles:
                    with contextlib.suppress(TypeError):  # not weakly referable: asked again
                        read_handles[id(args[0])] = weakref.ref(args[0])
                return out

            return saving_fast_path

        def slow_path(original: Callable[..., Any]) -> Callable[..., Any]:
            def saving_execute(ctx: Any, device: Any, op_type: Any, inputs: Any, *rest: Any) -> Any:
                known = may_write_of.get(op_type)
                if known or (known is None and may_write(op_type)):
                    save(inputs)
                return original(ctx, device, op_type, inputs, *rest)

            return saving_execute

        for name, wrap in (
            ("TFE_Py_FastPathExecute", fast_path),
            ("TFE_Py_Execute", slow_path),
            ("TFE_Py_ExecuteCancelable", slow_path),
        ):
            original = getattr(pywrap_tfe, name)
            self._patched.append((name, original))
            setattr(pywrap_tfe, name, wrap(original))
        return self

    def __exit__(self, *exc: Any) -> None:
        from tensorflow.python import pywrap_tfe

        while self._patched:
            name, original = self._patched.pop()
            setattr(pywrap_tfe, name, original)

    def restore(self) -> None:
        """Every saved value assigned back, newest first."""
        put_back([(h, v) for h, v in reversed(list(self.saved.values())) if v is not None])
        self.saved.clear()


def put_back(values: list[tuple[Any, Any]]) -> None:
    """Assign each ``(handle, value)`` pair back, in order: the op ``assign()`` runs, without
    its Python layers."""
    from tensorflow.python.ops import gen_resource_variable_ops as ops

    for handle, value in values:
        with contextlib.suppress(Exception):  # a variable deleted, or on a device gone
            ops.assign_variable_op(handle, value)


def _read(execute: Callable[..., Any], ctx: Any, handle: Any, initialized: bool = False) -> Any:
    """The value of the variable behind ``handle``, read by the C API (no op callback, no
    tape), or None where it has none (another kind of resource; not initialized yet).
    ``initialized``: the variable is known to hold a value, so it is not asked first (a read
    of one without a value raises, and TensorFlow logs that to stderr)."""
    try:
        shapes = handle._handle_data.shape_and_type
        if not shapes:
            return None
        if not initialized:
            if not execute(ctx._handle, None, "VarIsInitializedOp", [handle], (), 1)[0]._numpy():
                return None  # a variable made by the analysis: its first write is its initial value
        return execute(ctx._handle, None, "ReadVariableOp", [handle], ("dtype", shapes[0].dtype), 1)[0]
    except Exception:  # noqa: BLE001 - nothing to save, so nothing to put back
        return None


def every_live_variable() -> list[tuple[Any, Any]]:
    """Each live resource variable's handle and value, found among all of the process's
    objects: the slow twin of :class:`WrittenVariables` (and what a test compares against)."""
    import gc

    import tensorflow as tf
    from tensorflow.python.ops import gen_resource_variable_ops as ops
    from tensorflow.python.ops.resource_variable_ops import BaseResourceVariable

    values = []
    kinds: dict[type, bool] = {}  # isinstance on TensorFlow's classes is slow: once per type
    for obj in gc.get_objects():
        kind = type(obj)
        wanted = kinds.get(kind)
        if wanted is None:
            wanted = kinds[kind] = issubclass(kind, BaseResourceVariable) and not issubclass(
                kind, tf.distribute.DistributedValues
            )
        if wanted:
            with contextlib.suppress(Exception):  # uninitialized, made in a graph, on a device gone
                # A read is a snapshot: a later assignment copies the buffer, never changes it.
                # The op itself, as value() ends by running it: its Python layers took a
                # third of the snapshot's time for a ResNet50's 640 variables.
                values.append((obj.handle, ops.read_variable_op(obj.handle, obj.dtype)))
    return values
