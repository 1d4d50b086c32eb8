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

import collections
import contextlib
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from tfviz.report import Source
from tfviz.script.sourcemap import op_user_source, running_user_source

_EMPTY: frozenset[int] = frozenset()

#: how many arrays read out of tensors computed from variables the recorder keeps (the latest)
READ_OUTS_KEPT = 64

#: what an eager call's copy hands over of its lineage (:meth:`OriginRecorder.held`), in
#: the order it ran: a capture ``(CAPTURED, placeholder, eager tensor)``, a copied op
#: ``(COPIED, op, weak references to its eager outputs, user line)``, an op not copied
#: ``(NOT_COPIED, inputs, outputs, user line)``
CAPTURED, COPIED, NOT_COPIED = 0, 1, 2


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
        #: while :meth:`held`: the call's lineage, as its copy hands it over
        self._held: list[tuple[Any, ...]] | None = None
        #: lineage held and not recorded yet (:meth:`held`)
        self._pending: list[tuple[Any, ...]] = []
        #: the op about to run on TensorFlow's fast path and the handles of the variables it
        #: was handed itself (:meth:`noting_handed_variables`), for its callback
        self._handed: tuple[str, tuple[int, ...]] | None = None
        #: the arrays the program read out of tensors computed from variables, each with how
        #: that tensor was made and the user's line that read it out, the latest last
        #: (:meth:`noting_read_outs`); at most :data:`READ_OUTS_KEPT`, held weakly
        self._read_outs: collections.deque[tuple[Any, _Made, Source | None]] = collections.deque(
            maxlen=READ_OUTS_KEPT
        )

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
        if self._held is not None:  # the copy hands its lineage over
            return None
        if self._pending:  # an op run after held ones: those are recorded first, as they ran
            self.settle()
        handed, self._handed = self._handed, None
        extra = handed[1] if handed is not None and op_type in (handed[0], handed[0].encode()) else ()
        lineage = self._lineage(inputs, extra)
        if lineage is not None:  # the user's line read only for an op that is recorded
            self._store(outputs, _Made(*lineage, op_user_source(outputs)))
        return None

    def _record(self, inputs: Any, outputs: Any, source: Source | None, handed: tuple[int, ...] = ()) -> None:
        lineage = self._lineage(inputs, handed)
        if lineage is not None:
            self._store(outputs, _Made(*lineage, source))

    def _lineage(
        self, inputs: Any, handed: tuple[int, ...] = ()
    ) -> tuple[tuple[int, ...], tuple[_Made, ...]] | None:
        """The variable handles an op with ``inputs`` reads (and those it was ``handed``),
        and the made-records of its inputs made from variables; None where it has neither,
        and nothing is recorded of it: its user's line is not read then, for it is kept
        nowhere (a program's own ops on its data, its metrics, its optimizer's arithmetic on
        gradients no record holds), and the walk of the stack to it is most of a callback."""
        handles: list[int] = list(handed)
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
        return tuple(handles), tuple(parents)

    def _store(self, outputs: Any, made: _Made) -> None:
        for t in outputs:
            try:
                self._origins[id(t)] = (weakref.ref(t), made)
            except TypeError:
                pass

    @contextlib.contextmanager
    def held(self, needed: Callable[[], bool], lineage: list[tuple[Any, ...]]) -> Iterator[None]:
        """While entered, the ops that run are not recorded: the step's call, which tfviz
        copies as it runs (:mod:`tfviz.engine.eagerstream`), hands ``lineage`` over instead,
        in the order it ran (see :data:`CAPTURED`): each op it copied, whose tensors it holds
        only weakly, and each op it did not copy, with its tensors. Recording each of
        ResNet50's 1,900 ops as it ran was a third of the op callbacks' time (0.03 s), and
        holding them for a later record kept the call's every activation alive, for a lineage
        that matters only where a later call of the same analysis captures what the call
        made. On leaving, the lineage is recorded, in the order it ran, where the call made
        variables (a layer built lazily: its second call is the step), where ``needed()``
        says so (the copy refused: a trace calls the step again), or where the call raised.
        Else it waits (:attr:`_pending`): recorded as it would have been where the copy turns
        out not to stand for the step (:meth:`settle`) or another op is recorded, or dropped
        where the copy lets go of the call's tensors (:meth:`let_go`). Nothing else asks about
        them: the copy's own captures were made before the call (an op the copy does not
        copy, in a Keras ``predict()``, hands back NumPy)."""
        mark, self._held = self.made, lineage
        keep = True
        try:
            yield
            keep = self.made > mark or needed()
        finally:
            self._pending += self._held
            self._held = None
            if keep:
                self.settle()

    def let_go(self) -> None:
        """Drop the lineage that was never recorded (and the tensors of ops the copy did not
        copy with it), as the copy lets go of the call's tensors before the backward pass."""
        self._pending = []

    def settle(self) -> None:
        """Record the lineage that is still waiting, in the order it ran. A copied op's
        inputs are linked through the copy, not by the ids of eager tensors: the copy did
        not keep them alive, and an id may stand for another tensor since. What is recorded
        is what recording each op as it ran records of the tensors still alive."""
        pending, self._pending = self._pending, []
        made_of: dict[int, _Made] = {}  # id(copied tensor) -> how its eager tensor was made
        handle_of: dict[int, int] = {}  # id(copied tensor) -> id of the eager handle it stands for
        for entry in pending:
            if entry[0] == NOT_COPIED:
                self._record(entry[1], entry[2], entry[3])
            elif entry[0] == CAPTURED:
                _, placeholder, t = entry
                if getattr(t, "dtype", None) is self._resource:
                    handle_of[id(placeholder)] = id(t)
                else:
                    made = self._made(t)
                    if made is not None:
                        made_of[id(placeholder)] = made
            else:
                self._record_copied(entry[1], entry[2], entry[3], made_of, handle_of)

    def _record_copied(
        self,
        op: Any,
        refs: list[Callable[[], Any]],
        source: Source | None,
        made_of: dict[int, _Made],
        handle_of: dict[int, int],
    ) -> None:
        """:meth:`_record` of a copied op, its inputs read through the copy (``made_of`` and
        ``handle_of``, filled in the order the call ran), its outputs those still alive."""
        resource = self._resource
        for copy, ref in zip(op.outputs, refs):
            if copy.dtype is resource and (t := ref()) is not None:
                handle_of[id(copy)] = id(t)
        handles: list[int] = []
        parents: list[_Made] = []
        for copy in op.inputs:
            if copy.dtype is resource:
                if id(copy) in handle_of:
                    handles.append(handle_of[id(copy)])
            else:
                made = made_of.get(id(copy))
                if made is not None and (made.handles or made.parents):
                    parents.append(made)
        if not handles and not parents:
            return
        made = _Made(tuple(handles), tuple(parents), source)
        for copy, ref in zip(op.outputs, refs):
            made_of[id(copy)] = made
            t = ref()
            if t is not None:
                try:
                    self._origins[id(t)] = (weakref.ref(t), made)
                except TypeError:
                    pass

    def __enter__(self) -> OriginRecorder:
        from tensorflow.python.framework import op_callbacks

        op_callbacks.add_op_callback(self.callback)
        return self

    def __exit__(self, *exc: Any) -> None:
        from tensorflow.python.framework import op_callbacks

        op_callbacks.remove_op_callback(self.callback)

    @contextlib.contextmanager
    def noting_handed_variables(self) -> Iterator[None]:
        """While entered, an op handed a variable itself (``tf.multiply(v, 2.0)``; a Keras
        variable's operators, ``self.w * 2.0`` in a ``build()``, hand TensorFlow the variable)
        is recorded as reading it. TensorFlow's eager fast path reads such a variable in C++,
        with no op callback, so the op's callback sees a value from nowhere: the variables are
        noted here, by their handles, just before the op runs, for its callback. Reading them
        in Python instead (:func:`tfviz.engine.fastpath.reads_in_python`, as the eager copy
        does) made a Keras ``fit`` run to its 20th step 0.14 s slower (0.89 s against 0.75 s,
        medians of three); noting them, 0.05 s (0.85 s against 0.81 s, medians of eight
        alternating runs, which overlap)."""
        from tensorflow.python import pywrap_tfe
        from tensorflow.python.ops.resource_variable_ops import BaseResourceVariable

        fast_path = pywrap_tfe.TFE_Py_FastPathExecute

        def noting(ctx: Any, op_type: str, name: Any, *args: Any) -> Any:
            handles: list[int] = []
            try:
                for a in args:
                    if isinstance(a, BaseResourceVariable):
                        handles.append(id(a.handle))
                    elif isinstance(a, (list, tuple)):
                        handles.extend(id(x.handle) for x in a if isinstance(x, BaseResourceVariable))
            except Exception:  # noqa: BLE001 - a handle not to be had here: the op runs unnoted
                handles = []
            if not handles:
                return fast_path(ctx, op_type, name, *args)
            self._handed = (op_type, tuple(handles))
            try:
                return fast_path(ctx, op_type, name, *args)
            finally:
                self._handed = None

        pywrap_tfe.TFE_Py_FastPathExecute = noting
        try:
            yield
        finally:
            pywrap_tfe.TFE_Py_FastPathExecute = fast_path

    @contextlib.contextmanager
    def noting_read_outs(self) -> Iterator[None]:
        """While entered, a tensor computed from variables and read out into Python
        (``pred = model(x).numpy()``, ``np.asarray(pred)``) is noted with the array it gave
        and the user's line that read it. A tensor made again of that array
        (``tf.constant(pred)``, a Keras loss handed it) has no lineage of its own: only its
        values tell that it is a copy (:meth:`read_outs`). Nothing else is read: the array
        is the program's, as without tfviz."""
        from tensorflow.python.framework import ops

        cls = ops._EagerTensorBase
        originals = {name: cls.__dict__[name] for name in ("numpy", "__array__")}

        def noting(original: Callable[..., Any]) -> Callable[..., Any]:
            def read_out(t: Any, *args: Any, **kwargs: Any) -> Any:
                out = original(t, *args, **kwargs)
                made = self._made(t)
                if made is not None and (made.handles or made.parents):
                    self._note_read_out(out, made)
                return out

            read_out.__name__, read_out.__doc__ = original.__name__, original.__doc__
            return read_out

        for name, original in originals.items():
            setattr(cls, name, noting(original))
        try:
            yield
        finally:
            for name, original in originals.items():
                setattr(cls, name, original)

    def _note_read_out(self, array: Any, made: _Made) -> None:
        """Note ``array`` (:meth:`noting_read_outs`); those gone since are let go first, with
        the lineage they held (a loss read out at every step of a watched run)."""
        try:
            ref = weakref.ref(array)
        except TypeError:  # not an array that can be held weakly: not noted
            return
        kept = self._read_outs
        if any(r() is None for r, _, _ in kept):
            alive = [entry for entry in kept if entry[0]() is not None]
            kept.clear()
            kept.extend(alive)
        kept.append((ref, made, running_user_source(1)))

    def read_outs(self) -> list[tuple[Any, Callable[[], frozenset[int]], Source | None]]:
        """Each array noted as read out (:meth:`noting_read_outs`) that is still alive, the
        latest first: the array, what gives the ids of the variable handles its tensor was
        computed from (a walk of its lineage: asked only of an array a copy matches), and the
        user's line that read it out."""
        out = []
        for ref, made, source in reversed(self._read_outs):
            array = ref()
            if array is not None:
                out.append((array, made.variables, source))
        return out

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
