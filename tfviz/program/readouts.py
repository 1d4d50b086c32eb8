"""Values an eager step reads out of TensorFlow into Python, replayed in its trace.

An eager training step often leaves TensorFlow for a moment: an actor-critic
loop samples its action with ``np.random.choice(p=np.squeeze(probs))``, a
loop stops on ``if done:``, a log line calls ``float(loss)``. Traced, each of
those reads a symbolic tensor and raises, so the step would get no graph.

The engine runs the replayed step eagerly before it traces it. (A variable read
out has the value it holds outside the graph.) An op callback keeps the small
outputs of each op of that eager run, in order.
While the same step is traced, the callback lists the ops the trace makes;
when the step's own code reads a symbolic tensor out (``np.asarray``,
``.numpy()``, ``float``, ``int``, ``bool``), its op is matched to the eager
run's op at the same place in the two sequences (same type, in order) and
the value that op had is handed over. The graph is then the step exactly as
that eager run went. Nothing read out carries a gradient, in TensorFlow or
here, so the verdicts do not depend on it. A read that finds no match raises
as TensorFlow would.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from tfviz.program.calls import AUTOGRAPH_API, Predicted
from tfviz.program.sources import variable_ids
from tfviz.program.watch import some_names
from tfviz.report import Problem, Report, Source
from tfviz.script.discover import FoundVariable
from tfviz.script.sourcemap import reading_user_line
from tfviz.vocabulary import READ_OUT_AS, Kind, Severity, Status

_KINDS = ("__array__", "__float__", "__int__", "__index__", "__bool__")
_LIBRARIES = tuple(os.sep + name + os.sep for name in ("tensorflow", "keras", "tfviz"))
#: outputs larger than this are not kept: what a step reads out is a score or a distribution
_KEEP_ELEMENTS = 1 << 16
#: how far ahead in the eager ops a traced op's match is looked for
_LOOKAHEAD = 64


class Readouts:
    """The ops of one eager run of a step, and those of a trace of it."""

    def __init__(self) -> None:
        self.eager: list[tuple[str, list[Any]]] = []
        self.traced: list[str] = []
        self.position: dict[str, int] = {}
        self.recording = True
        self._matched: list[int | None] = []
        #: variables the step read out into Python, by id, with the user's line that did it
        self.variables: dict[int, Any] = {}
        #: (id of the traced graph, op name) -> how the step's code read that op's output out
        #: into Python in the last trace (:data:`~tfviz.vocabulary.READ_OUT_AS`), and where
        self.read_outs: dict[tuple[int, str], tuple[str, Source | None]] = {}

    def start(self, eager: bool) -> None:
        """An eager run records anew; a trace lists its own ops against the last recording."""
        self.recording = eager
        if eager:
            self.eager = []
        else:
            self.read_outs = {}
        self.traced, self.position, self._matched = [], {}, []

    def callback(
        self,
        op_type: str | bytes,
        inputs: Any,
        attrs: Any,
        outputs: Any,
        op_name: str | bytes | None = None,
        graph: Any = None,
    ) -> None:
        kind = op_type.decode() if isinstance(op_type, bytes) else op_type
        if graph is None and self.recording:
            kept = [t if _small(t) else None for t in outputs or ()]
            self.eager.append((kind, kept))
        elif graph is not None and not self.recording and op_name:
            name = op_name.decode() if isinstance(op_name, bytes) else op_name
            self.position[name] = len(self.traced)
            self.traced.append(kind)
        return None

    def value_of(self, t: Any) -> Any:
        """The eager run's value of the traced tensor ``t``, or None."""
        p = self.position.get(t.op.name)
        if p is None:
            return None
        self._align(p)
        j = self._matched[p]
        if j is None:
            return None
        kept = self.eager[j][1]
        out = kept[t.value_index] if t.value_index < len(kept) else None
        return None if out is None else out.numpy()

    def _align(self, upto: int) -> None:
        """Match traced ops to eager ops in order, by type, up to traced op ``upto``."""
        j = next((m + 1 for m in reversed(self._matched) if m is not None), 0)
        for i in range(len(self._matched), upto + 1):
            kind = self.traced[i]
            found = next(
                (k for k in range(j, min(j + _LOOKAHEAD, len(self.eager))) if self.eager[k][0] == kind), None
            )
            self._matched.append(found)
            if found is not None:
                j = found + 1


def _small(t: Any) -> bool:
    try:
        return t.dtype.name not in ("resource", "variant") and t.shape.num_elements() <= _KEEP_ELEMENTS
    except (AttributeError, TypeError, ValueError):
        return False


_active: Readouts | None = None


@contextlib.contextmanager
def reading(readouts: Readouts) -> Iterator[None]:
    import tensorflow as tf
    from tensorflow.python.framework import op_callbacks

    global _active
    old = _active
    readouts.start(tf.executing_eagerly())
    _active = readouts
    op_callbacks.add_op_callback(readouts.callback)
    try:
        yield
    finally:
        op_callbacks.remove_op_callback(readouts.callback)
        _active = old


def _from_user_code() -> bool:
    """The read is the program's, not TensorFlow's or Keras' own (numpy in between is fine)."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if (
            os.sep + "numpy" + os.sep not in filename
            and not filename.endswith("readouts.py")
            and not filename.endswith(AUTOGRAPH_API)
        ):
            return not any(lib in filename for lib in _LIBRARIES) or "__autograph_generated" in filename
        frame = frame.f_back
    return False


def _player(name: str, original: Callable[..., Any] | None) -> Callable[..., Any]:
    def read(self: Any, *args: Any, **kwargs: Any) -> Any:
        r = _active
        if r is not None and not r.recording and _from_user_code():
            value = r.value_of(self)
            if value is not None:
                r.read_outs.setdefault(
                    (id(self.graph), self.op.name), (READ_OUT_AS[name], reading_user_line(sys._getframe(1)))
                )
                if name in ("numpy", "__array__"):
                    import numpy as np

                    return np.asarray(value, dtype=args[0] if args else None)
                return {"__float__": float, "__int__": int, "__index__": int, "__bool__": bool}[name](value)
        if original is None:
            raise TypeError(
                f"{name.strip('_')}() of a symbolic tf.Tensor ({self.name}) needs a value;"
                " a traced step has none"
            )
        return original(self, *args, **kwargs)

    read.__name__ = name
    return read


def _numpy_attribute(original: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """``t.numpy`` exists on a symbolic tensor only for the step's own code while a
    trace plays values back: libraries test ``hasattr(t, "numpy")`` to tell eager tensors."""
    play = _player("numpy", None)

    def __getattr__(self: Any, name: str) -> Any:
        r = _active
        if name == "numpy" and r is not None and not r.recording and _from_user_code():
            return lambda: play(self)
        return original(self, name)

    return __getattr__


def _variable_numpy(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A variable read out in a traced step has the value it holds outside the graph,
    the one the eager run read (a replay updates nothing)."""

    def numpy(self: Any) -> Any:
        r = _active
        if r is not None and _from_user_code():
            import traceback

            from tfviz.script.sourcemap import user_source

            r.variables.setdefault(id(self), user_source(traceback.extract_stack()))
            if not r.recording:
                import tensorflow as tf

                with tf.init_scope():
                    return original(self)
        return original(self)

    return numpy


def patches() -> list[tuple[Any, str, Callable[[Any], Any]]]:
    """``(class, method, make)`` for hooks to install on symbolic tensors and variables."""
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import resource_variable_ops

    out: list[tuple[Any, str, Callable[[Any], Any]]] = [
        (ops.SymbolicTensor, name, lambda orig, n=name: _player(n, orig))  # type: ignore[misc]
        for name in _KINDS
    ]
    out.append((ops.SymbolicTensor, "__getattr__", _numpy_attribute))
    out.append((resource_variable_ops.BaseResourceVariable, "numpy", _variable_numpy))
    return out


def predicted(report: Report, found: list[FoundVariable], calls: list[Predicted], what: str = "step") -> None:
    """Weights of a model whose ``predict()`` the step called while its tape recorded.

    ``predict()`` hands back NumPy, which no tape records: a loss computed from it is plain
    numbers to TensorFlow, whose ``tape.gradient`` gives each weight None (and the step cannot
    be traced: predict reads its tensors out). Name the call, at the user's line, in place of
    a bare "None" and of the failed trace; ``what`` is how the report speaks of what ran
    (a program's step, a ``loss()`` target)."""
    if not calls:
        return
    where: dict[int, tuple[str, Source]] = {}
    for call in calls:
        for v in call.model.trainable_variables:
            for key in variable_ids(v):
                where.setdefault(key, (call.name, call.source))
    by_path = {
        f.path: next(
            (where[i] for i in variable_ids(f.variable) | variable_ids(f.tf_variable) if i in where), None
        )
        for f in found
    }
    named: dict[tuple[str, int | None], list[str]] = {}
    sources: dict[tuple[str, int | None], Source] = {}
    for row in report.variables:
        hit = by_path.get(row.name)
        if hit is None or row.status != Status.DISCONNECTED or row.kind not in (Kind.OTHER, Kind.NOT_READ):
            continue
        name, source = hit
        row.kind = Kind.NOT_READ
        row.explanation = (
            f"the {what} calls {name}.predict() at {source.label(os.path.basename)} while its tape"
            " records; predict() returns a NumPy array, which the tape cannot"
            " follow, so the loss gets plain numbers and no gradient reaches this weight"
        )
        named.setdefault((name, source.line), []).append(row.name)
        sources[(name, source.line)] = source
    done = {v for rows in named.values() for v in rows}
    report.problems = [
        p
        for p in report.problems
        if not (p.kind in (Kind.OTHER, Kind.NOT_READ) and p.variables and set(p.variables) <= done)
    ]
    for (name, line), rows in named.items():
        report.problems.append(
            Problem(
                kind=Kind.NOT_READ,
                severity=Severity.ERROR,
                op="",
                op_type="",
                message=(
                    f"{name}.predict() at {sources[(name, line)].label(os.path.basename)} returns a NumPy"
                    " array while the tape records:"
                    f" the loss is computed from plain numbers, so {some_names(rows)} get no gradient"
                ),
                variables=rows,
                source=sources[(name, line)],
                hint="Call the model itself inside the tape, model(x, training=True), not model.predict(x).",
            )
        )
    report.ok = report.ok and not any(p.severity == Severity.ERROR for p in report.problems)
