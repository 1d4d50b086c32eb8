"""Remember where eagerly computed tensors came from.

A frozen copy of a weight is an eager tensor computed from a variable before
the target ran (in ``build()``, at import). TensorFlow keeps no history for
eager tensors, and recording them on a persistent tape would change how
``tf.function`` calls behave. So while the script loads and first runs, an op
callback notes for each eager op's outputs which variable handles they were
computed from and the user's line that ran the op. Only weak references to
the tensors are kept.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

from tfviz.report import Source
from tfviz.script.sourcemap import op_user_source

_EMPTY: frozenset[int] = frozenset()


class _Made:
    """How one eager op's outputs were made: the variable handles it read (ids), the
    made-records of its inputs that were made from variables, and the user's line.

    Linked, not unioned: a union per op copies every upstream variable's id into each
    activation, so a deep model's forward pass cost the square of its depth. The union
    is taken only for the few tensors asked about (:meth:`OriginRecorder.sources_of`)."""

    __slots__ = ("handles", "parents", "source")

    def __init__(self, handles: tuple[int, ...], parents: tuple[_Made, ...], source: Source | None) -> None:
        self.handles, self.parents, self.source = handles, parents, source

    def variables(self) -> frozenset[int]:
        """ids of the variable handles read on the way to these outputs."""
        seen: set[int] = set()
        found: set[int] = set()
        stack = [self]
        while stack:
            made = stack.pop()
            if id(made) in seen:
                continue
            seen.add(id(made))
            found.update(made.handles)
            stack.extend(made.parents)
        return frozenset(found)


class OriginRecorder:
    def __init__(self) -> None:
        from tensorflow.python.framework import dtypes

        self._resource = dtypes.resource
        self._origins: dict[int, tuple[Any, _Made]] = {}
        #: how many variables were made while recording; each handle's number, by id
        self.made = 0
        self._number: dict[int, int] = {}

    def _made(self, t: Any) -> _Made | None:
        hit = self._origins.get(id(t))
        if hit is None or hit[0]() is not t:
            return None
        return hit[1]

    def sources_of(self, t: Any) -> frozenset[int]:
        """ids of the variable handles ``t`` was computed from."""
        made = self._made(t)
        return _EMPTY if made is None else made.variables()

    def callback(
        self,
        op_type: str | bytes,
        inputs: Any,
        attrs: Any,
        outputs: Any,
        op_name: str | None = None,
        graph: Any = None,
    ) -> None:
        if graph is not None or not outputs:
            return None
        if op_type in ("VarHandleOp", b"VarHandleOp"):
            # A new variable: remember the user's line that created it.
            self._origins[id(outputs[0])] = (weakref.ref(outputs[0]), _Made((), (), op_user_source(outputs)))
            self.made += 1
            self._number[id(outputs[0])] = self.made
            return None
        handles: list[int] = []
        parents: list[_Made] = []
        resource = self._resource
        for t in inputs or ():
            if getattr(t, "dtype", None) is resource:  # DTypes are interned
                handles.append(id(t))
            else:
                made = self._made(t)
                if made is not None and (made.handles or made.parents):
                    parents.append(made)
        if not handles and not parents:
            return None
        made = _Made(tuple(handles), tuple(parents), op_user_source(outputs))
        for t in outputs:
            try:
                self._origins[id(t)] = (weakref.ref(t), made)
            except TypeError:
                pass
        return None

    def __enter__(self) -> OriginRecorder:
        from tensorflow.python.framework import op_callbacks

        op_callbacks.add_op_callback(self.callback)
        return self

    def __exit__(self, *exc: Any) -> None:
        from tensorflow.python.framework import op_callbacks

        op_callbacks.remove_op_callback(self.callback)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Not recording for a while (a trace: its ops are graph ops, never frozen copies)."""
        self.__exit__()
        try:
            yield
        finally:
            self.__enter__()

    def made_since(self, mark: int, handle: Any) -> bool:
        """Whether the variable of ``handle`` was made after :attr:`made` was ``mark``
        (a layer built lazily by a call)."""
        return self._made(handle) is not None and self._number.get(id(handle), 0) > mark

    def origin(self, t: Any) -> Source | None:
        made = self._made(t)
        return None if made is None else made.source
