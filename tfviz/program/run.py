"""Program mode: run the user's script as ``python SCRIPT ARGS`` would, until
its N-th gradient computation, and hand that step to the engine.

The program runs as ``__main__`` with its own ``sys.argv``. Every gradient
computation it reaches (``tape.gradient``/``jacobian``, ``tf.gradients``,
Keras ``fit``/``train_on_batch``, or an exception escaping a recording tape)
is counted; at the N-th the program is stopped where it stands, before
anything applies the gradients: it is never unwound, so none of its
``except``/``finally`` blocks runs (:mod:`tfviz.program.launch`). The step is
kept as a :mod:`tfviz.program.replay` callable plus the sources it differentiates.

Counting follows what runs. A ``tf.function`` step's gradient calls are
seen while it is traced, once per call that traces: TensorFlow may trace a
call twice (Keras creates optimizer slots in a first trace it throws away),
and that retrace is the same step. Each later call that runs the traced
graph counts as many computations as that trace held, and a step that falls
inside such a call is captured from a new trace of it (:mod:`tfviz.program.stepcount`),
with the variables as the earlier calls left them. Keras'
``fit`` runs ``train_step`` eagerly batch by batch, so a model that Keras
would build inside its own trace is built the way a user's first call
builds it, and frozen copies made in ``build()`` stay visible; the batch
that holds the step, on a built model, is reached in a trace of
``train_step`` instead, as Keras runs it (an eager forward pass would keep
every activation at once).
"""

from __future__ import annotations

import collections
import functools
import os
import sys
import types
from collections.abc import Callable
from typing import Any

from tfviz.engine.trace import raising_op
from tfviz.errors import AnalysisError
from tfviz.program import hooks
from tfviz.program.capture import Entry, FrozenTraining, Listing, Reached, Refused, StepCapture, TapeStart
from tfviz.program.frames import (
    choose_replica,
    frame_source,
    handles_captured,
    in_function_graph,
    local_replica,
    namespace,
    other_replica,
    outermost_graph,
    user_line,
)
from tfviz.program.replay import BlockReplay, CallReplay, block_code, run_python
from tfviz.program.sources import local_names, name_sources, outside_objects, tape_keys, variable_ids
from tfviz.program.stepcount import CompiledStep, Steps, trace_again
from tfviz.program.watch import Watch
from tfviz.report import Source
from tfviz.script.loader import read_source
from tfviz.script.notebook import known as known_notebook
from tfviz.script.scriptinfo import TF1_REFUSAL
from tfviz.script.sourcemap import is_user_file


def _source_of(filename: str) -> str:
    """A step's source file; a notebook cell's code, which its kernel keeps in ``linecache``
    and not on disk, as the kernel has it (:func:`tfviz.check` on a notebook's step function)."""
    if not os.path.exists(filename):
        import linecache

        lines = linecache.getlines(filename)
        if lines:
            return "".join(lines)
    return read_source(filename)


def _reduces_in_keras(optimizer: Any) -> bool:
    """Whether ``optimizer`` sums a replica's gradients with the strategy's all-reduce of the
    whole list at once (Keras 3's optimizers on TensorFlow): the watched step's agreement can
    then ride that all-reduce instead of making one of its own."""
    try:
        from keras.src.backend.tensorflow.optimizer import TFOptimizer
    except ImportError:  # pragma: no cover - Keras ships with TensorFlow
        return False
    return isinstance(optimizer, TFOptimizer)


def _graph_step(model: Any) -> Any:
    """``model.train_step`` as a tf.function, made once per model."""
    import tensorflow as tf

    step = getattr(model, "_tfviz_graph_step", None)
    if step is None:
        step = tf.function(model.train_step)
        object.__setattr__(model, "_tfviz_graph_step", step)
    return step


def _final(method: Callable[..., Any]) -> Callable[..., Any]:
    """A hook whose end of the program (:class:`Reached`, :class:`Refused`) is
    handed to ``stopped`` right here, at the interception point, instead of
    unwinding through the program's own code."""

    @functools.wraps(method)
    def hook(self: RunHandler, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (Reached, Refused) as end:
            if self.stopped is not None:
                self.stopped(end)  # does not return
            raise

    return hook


class RunHandler:
    """Counts gradient computations while the program runs."""

    def __init__(
        self,
        step: int,
        script: str,
        stopped: Callable[[BaseException], None] | None = None,
        watch: Watch | None = None,
        source: str | None = None,
    ) -> None:
        self.step, self.script, self.count = step, script, 0
        #: the script's text as the analysis read it (None: read a frame's file where needed)
        self.source = source
        #: ``check --until``: every step is measured, and the first bad one is the step captured
        self.watch = watch
        #: gradient calls seen so far in each traced graph of a watched step (by id)
        self._ordinals: dict[int, int] = {}
        #: the same for another replica of the step, by graph and local replica
        self._replica_ordinals: dict[tuple[int, int | None], int] = {}
        #: gradient calls in the latest trace of a watched step: what each of its calls makes
        self._trace_hits = 0
        #: a watched Keras batch's tf.function: counted by the batch, not as a nested call
        self._direct: Any = None
        #: called once in the program's thread after its first watched step (see :meth:`_settled`)
        self.settle: Callable[[], None] | None = None
        #: jit-compiled steps and the copies without XLA that run them while watched
        self._plain: dict[int, tuple[Any, Any]] = {}
        #: ends the program at the hook that reached (or refused) its step; it never returns
        self.stopped = stopped
        #: the captured step, between its gradient call and the optimizer's update
        self.pending: StepCapture | None = None
        self.entries: list[Entry] = []
        self.tapes: collections.OrderedDict[int, TapeStart] = collections.OrderedDict()
        self.watched: dict[int, list[Any]] = {}
        #: outermost tf.functions and what each call runs unseen (see tfviz.program.stepcount)
        self.compiled = Steps()
        #: the nested tf.functions being called (traced or inlined) right now, innermost last
        self.nested: list[Any] = []
        #: tracing a call again to capture the step in it (see _capture_call)
        self.retracing = False
        #: gradient calls seen in Python, a retrace's included: what a nested trace held
        self.seen = 0
        #: tapes entered so far: which of a step's tapes made its gradient call
        self.tape_serial = 0
        #: the last trainable-variable list the program's code read, per layer and line
        self.listings: dict[tuple[int, str, int], Listing] = {}
        #: Keras training calls on a model with nothing to train, per model and line
        self.frozen_training: dict[tuple[int, str, int], FrozenTraining] = {}
        #: the LossScaleOptimizer that scaled the loss of the tape recording now
        self.scaler: Any = None
        #: where the program called ``tfviz.check`` on a function of its own: that check's
        #: gradient calls are not the program's steps (:func:`tfviz.api.check`)
        self.own_checks: list[Source] = []

    # -- tapes ---------------------------------------------------------------
    @_final
    def tape_entered(self, tape: Any, frame: Any) -> bool:
        self._stop_if_pending()
        if other_replica():
            return True  # each replica opens the same tapes: count one
        start = TapeStart(frame, frame.f_lineno, namespace(frame), self.count, serial=self.tape_serial)
        self.tape_serial += 1
        if in_function_graph():  # AutoGraph's frame: TensorFlow maps it to the user's line (once a trace)
            start.where = user_line()
        self.tapes[id(tape)] = start
        while len(self.tapes) > 64:
            self.tapes.popitem(last=False)
        self.watched.pop(id(tape), None)
        self.scaler = None  # a loss scaled for another tape's step is not this one's
        return True

    @_final
    def tape_exited(self, tape: Any, error: BaseException | None) -> None:
        if error is None or not isinstance(error, Exception) or raising_op(error) is None:
            return
        self._count(hooks.Hit(api="exception", tape=tape, target=None, sources=None, error=error))

    @_final
    def tape_watched(self, tape: Any, tensors: Any) -> None:
        import tensorflow as tf

        self.watched.setdefault(id(tape), []).extend(tf.nest.flatten(tensors))

    @_final
    def gradient(self, hit: hooks.Hit, original: Callable[[], Any]) -> Any:
        if self.pending is not None and self._may_stop():
            self.pending.gradient_again(hit, user_line())
        self._stop_if_pending()
        self._count(hit)
        if self.pending is None:
            if self.watch is None or self.retracing:
                return original()
            if other_replica():
                return self._joined(original())
            return self._watched(hit, original())
        # The captured step: the program gets TensorFlow's own gradients and runs on to its
        # update, where it is stopped; what it applies them to is matched by identity. A
        # gradient call that raises stops it here, before the error reaches its code.
        try:
            grads = original()
        except Exception:
            if self._may_stop():
                raise Reached(self.pending) from None
            raise
        self._recorded(hit, grads)
        return self.pending.hand(hit, grads)

    def _recorded(self, hit: hooks.Hit, grads: Any) -> None:
        """The captured step of a recorded watch (``--record``, the live view) goes into the
        record too, as every step before it did: it is the step the report diagnoses."""
        import tensorflow as tf

        if (
            self.watch is not None
            and self.watch.detailed
            and self.count == self.step
            and self.watch.last_step < self.count  # not the step whose check fired: it is in already
            and not self.retracing
            and tf.executing_eagerly()
            and not other_replica()
        ):
            self.watch.check_eager(hit.sources, grads, hit.target, self.count, self.scaler)

    def _watched(self, hit: hooks.Hit, grads: Any) -> Any:
        """The gradients of a watched step: checked now (eager), or made to pass the check
        the trace adds (a tf.function step); a step that fails it eagerly is captured here."""
        import tensorflow as tf

        assert self.watch is not None
        if not tf.executing_eagerly():
            if not self.entries:
                return grads  # a trace we did not start from an eager call
            graph = outermost_graph()
            ordinal = self._ordinals[id(graph)] = self._ordinals.get(id(graph), 0) + 1
            self._trace_hits = ordinal
            return self.watch.wrap(hit.sources, grads, hit.target, ordinal, self.scaler)
        if self.watch.check_eager(hit.sources, grads, hit.target, self.count, self.scaler) is None:
            self._settled()
            return grads
        self.step = self.count
        self.pending = self._capture(hit, self.entries[0] if self.entries else None)
        return self.pending.hand(hit, grads)

    def _joined(self, grads: Any) -> Any:
        """The gradients of another replica of a watched step being traced: they join the
        step's agreement (:meth:`Watch.join`), so that a condition one replica's batch sets
        off stops every replica, on every worker, before the update."""
        import tensorflow as tf

        assert self.watch is not None
        if tf.executing_eagerly() or not self.entries:
            return grads
        key = (id(outermost_graph()), local_replica())
        ordinal = self._replica_ordinals[key] = self._replica_ordinals.get(key, 0) + 1
        return self.watch.join(grads, ordinal)

    def _settled(self) -> None:
        """The first watched step is over: what tfviz records of every eager op (where copies of
        weights are made: at import, in ``build()``, on the first call) is complete, and the
        thousands of steps to come need not pay for it."""
        if self.settle is not None and self.watch is not None and self.watch.watched_steps:
            settle, self.settle = self.settle, None
            settle()

    def _watch_fired(self) -> bool:
        """A watched tf.function call failed because its check fired (not the program's error)."""
        return (
            self.watch is not None
            and self.watch.fired is not None
            and self.pending is None
            and self.count < self.step
        )

    @_final
    def optimizer_apply(
        self, optimizer: Any, grads: list[Any], variables: list[Any], original: Callable[[], Any]
    ) -> Any:
        if self.pending is None or other_replica():
            if self.watch is not None and not self.retracing:
                # the watched step's agreement rides the optimizer's all-reduce, or is made now
                self.watch.before_update(riding=_reduces_in_keras(optimizer))
                if self.watch.detailed:
                    return self.watch.around_update(variables, original)
            return original()
        if self.pending.updates is None:
            self.pending.record_update(grads, variables, user_line())
        if not self._may_stop():
            return original()
        raise Reached(self.pending)

    def all_reduce(self, context: Any, reduce_op: Any, value: Any, original: Callable[[Any], Any]) -> Any:
        if self.watch is None or self.retracing or self.pending is not None:
            return original(value)
        return self.watch.all_reduce(context, reduce_op, value, original)

    @_final
    def variable_assigned(self, variable: Any) -> None:
        if self.watch is not None and not self.retracing and self.pending is None:
            self.watch.before_update(riding=False)  # a hand-written update: agree before it
        if self._may_stop(assigning=True):
            self.pending.updates_known = False  # type: ignore[union-attr] # a hand-written update
            raise Reached(self.pending)  # type: ignore[arg-type]

    def loss_scaled(self, optimizer: Any) -> None:
        """A LossScaleOptimizer scales the loss (Keras 3 ``scale_loss``): the gradient the
        step's tape returns next is that many times the one the optimizer applies."""
        if self.pending is None:
            self.scaler = optimizer

    @_final
    def trainable_listed(self, layer: Any, variables: list[Any], frame: Any) -> None:
        if not is_user_file(frame.f_code.co_filename):
            return
        ids: set[int] = set()
        for v in variables:
            ids |= variable_ids(v)
        where = frame_source(frame)
        self.listings[(id(layer), where.file, where.line)] = Listing(layer, ids, where)

    def _stop_if_pending(self) -> None:
        if self._may_stop():
            raise Reached(self.pending)  # type: ignore[arg-type]

    def _may_stop(self, assigning: bool = False) -> bool:
        """Whether the program can be stopped at its captured step now.

        Not while the step's gradient call was met in the first trace of a
        tf.function that creates variables (a model built lazily by its first
        call inside the step): that trace is let finish, TensorFlow then
        initialises the variables it created and traces the step again, and
        the program is stopped there, before anything runs. Unwound earlier,
        the variables would stay uninitialised (shape [0]) and the replay could
        not run the model. An assignment in another graph than the step's
        (TensorFlow's variable initialiser) is not the step's update.
        """
        import tensorflow as tf

        if self.pending is None or other_replica():
            return False
        if not self.entries or tf.executing_eagerly():
            return True
        entry = self.entries[0]
        if entry.graph is None or entry.graph is not outermost_graph():
            return not assigning
        return not (entry.first_trace and getattr(entry.function, "_created_variables", None))

    # -- steps ---------------------------------------------------------------
    @_final
    def function_called(
        self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], frame: Any, original: Callable[[], Any]
    ) -> Any:
        import tensorflow as tf

        if fn is self._direct:
            return original()
        if self.entries:
            return self._nested_call(fn, args, kwargs, original)
        if not tf.executing_eagerly():
            return original()  # a trace we did not start from an eager call (get_concrete_function)
        self._stop_if_pending()
        if self.watch is not None and getattr(fn, "_jit_compile", None):
            fn, original = self._without_xla(fn, args, kwargs)
        compiled = self.compiled.called(fn)

        def entry(label: str = "") -> Entry:
            return Entry(
                fn.python_function,
                args,
                kwargs,
                namespace(frame),
                label=label,
                autograph=bool(getattr(fn, "_autograph", True)),
                called_at=frame_source(frame),
                function=fn,
                first_trace=getattr(fn, "_variable_creation_config", True) is None,
            )

        if compiled.per_call and self.count + compiled.per_call >= self.step:
            # The step is one this call would run as a graph, unseen: trace it instead.
            self._capture_call(fn, args, kwargs, compiled, entry(f"{compiled.name}, call {compiled.calls}"))
        before, traces = self.count, compiled.traces()
        self.entries.append(self._started(entry()))
        if self.watch is not None:
            self.watch.base = before
        try:
            try:
                result = original()
            finally:
                self.entries.pop()
        except Exception:
            if not self._watch_fired():
                raise
            # The check stopped the call before its update: capture that step from a new trace,
            # of the replica it fired on where that is one of this process's
            self.count, self.step = before, before + self.watch.fired.ordinal  # type: ignore[union-attr]
            choose_replica(self.watch.fired_local)  # type: ignore[union-attr]
            self._capture_call(fn, args, kwargs, compiled, entry(f"{compiled.name}, call {compiled.calls}"))
            raise
        self.count += compiled.ran(self.count - before, traces)
        self._settled()
        self._stop_if_pending()  # the step ran without calling an optimizer
        return result

    def _without_xla(
        self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Callable[[], Any]]:
        """A ``jit_compile=True`` step, watched: XLA cannot compile the host callback that checks
        each step, so the step runs as the same tf.function without XLA (one copy, traced once)."""
        assert self.watch is not None
        plain = self._plain.get(id(fn))
        if plain is None or plain[0] is not fn:
            copy = fn._clone(python_function=None)
            copy._jit_compile = False  # before its first trace, which reads it
            plain = self._plain[id(fn)] = (fn, copy)
            name = getattr(fn, "__name__", None) or getattr(fn, "name", "the step")
            self.watch.notes.append(
                f"{name} is compiled with XLA (jit_compile=True); while watched it"
                " ran without XLA, since XLA cannot run tfviz's per-step check"
            )
        copy = plain[1]

        def call() -> Any:
            self._direct = copy
            try:
                return copy(*args, **kwargs)
            finally:
                self._direct = None

        return copy, call

    def _capture_call(
        self,
        fn: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        compiled: CompiledStep,
        entry: Entry | None,
    ) -> None:
        """Capture the step inside this call of ``fn`` before the call runs.

        ``entry``: the step this call is, when it is the outermost; None for a
        tf.function an eager Keras ``train_step`` calls (the batch is the step,
        and its replay runs ``fn`` as Python).
        Returns only when the new trace holds fewer gradient computations than
        the last one (other arguments, other Python branches): the call then
        runs as usual and counts what its own trace holds.
        """
        outer = self.entries[0] if self.entries else None
        saved, hits, graph = self.count, outer.hits if outer else 0, outer.graph if outer else None
        if entry is not None:
            self.entries.append(self._started(entry))
        else:
            self.nested.append(fn)
        step = self.entries[0]
        self.retracing = True
        try:
            trace_again(fn, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - the user's step, traced once more
            where = step.called_at
            raise Refused(
                AnalysisError(
                    f"tfviz traced call {compiled.calls} of {compiled.name} again to capture gradient"
                    f" computation {self.step}, and the trace raised {type(exc).__name__}: {exc}",
                    file=where.file if where else self.script,
                    line=where.line if where else None,
                    code=where.code if where else "",
                )
            ) from None
        finally:
            self.retracing = False
            if entry is not None:
                self.entries.pop()
            else:
                self.nested.pop()
        self._stop_if_pending()  # reached, and the step calls no optimizer
        self.count = saved
        if outer is not None:
            outer.hits, outer.graph = hits, graph

    def _started(self, entry: Entry) -> Entry:
        entry.tapes_before = self.tape_serial
        return entry

    def _nested_call(
        self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], original: Callable[[], Any]
    ) -> Any:
        """A tf.function called inside the step: the outermost call is the step.

        While a call is traced again for its capture, a nested Function is run
        as Python: it would find its own graph cached and show no gradient call.
        In a trace of the program's own, a nested Function that runs its cached
        graph adds that graph's gradient computations to the step being traced.
        """
        import tensorflow as tf

        if self.retracing:
            self.nested.append(fn)
            try:
                return run_python(fn, args, kwargs)
            finally:
                self.nested.pop()
        compiled = self.compiled.called(fn)
        eager = tf.executing_eagerly()  # called by an eager Keras train_step, batch by batch
        if eager and compiled.per_call and self.count + compiled.per_call >= self.step:
            self._capture_call(fn, args, kwargs, compiled, None)
        before, traces = self.seen, compiled.traces()
        self.nested.append(fn)
        try:
            result = original()
        finally:
            self.nested.pop()
        unseen = compiled.ran(self.seen - before, traces)
        if unseen and eager:
            step = self.entries[0]
            self.count += unseen
            step.hits += unseen
            if not any(fn is f for f in step.inline):
                step.inline.append(fn)  # a later gradient call of this batch: the replay must count these
        elif unseen:
            self._count_unseen(unseen)
        return result

    def _count_unseen(self, n: int) -> None:
        """``n`` gradient computations a nested Function's cached graph holds, in
        the trace of the outermost call (once: not in a retrace of that call)."""
        self.seen += n
        entry = self.entries[0]
        top = outermost_graph()
        if entry.graph is None:
            entry.graph = top
        elif entry.graph is not top:
            return
        self.count += n
        entry.hits += n

    @_final
    def keras_fit(self, model: Any, p: dict[str, Any], frame: Any, original: Callable[[], Any]) -> Any:
        if self.entries:
            return original()
        import keras

        from tfviz.program.kerasrun import fit_batches

        self._note_frozen(model, frame, "fit")
        for epoch, batch, data in fit_batches(model, p, self.script):
            label = f"Model.fit → {type(model).__name__}.train_step, epoch {epoch}, batch {batch}"
            self._keras_step(model, data, frame, label)
        return keras.callbacks.History()

    @_final
    def keras_train_on_batch(
        self, model: Any, p: dict[str, Any], frame: Any, original: Callable[[], Any]
    ) -> Any:
        if self.entries:
            return original()
        from tfviz.program.kerasrun import batch_of

        self._note_frozen(model, frame, "train_on_batch")
        logs = self._keras_step(
            model, batch_of(p), frame, f"Model.train_on_batch → {type(model).__name__}.train_step"
        )
        if p.get("return_dict"):
            return logs
        values = list(logs.values()) if isinstance(logs, dict) else logs
        return values[0] if isinstance(values, list) and len(values) == 1 else values

    def _note_frozen(self, model: Any, frame: Any, method: str) -> None:
        """Note a training call on a model whose every weight is frozen: its step computes
        no gradient (Keras only warns), so the program never reaches one for it."""
        try:
            frozen = bool(model.weights) and not model.trainable_weights
        except Exception:  # noqa: BLE001 - a model that cannot list its weights: not ours to judge
            return
        if not frozen:
            return
        where = frame_source(frame)
        held = next((k for k, v in namespace(frame).items() if v is model), None)
        call = f"{held or model.name}.{method}"
        self.frozen_training.setdefault(
            (id(model), where.file, where.line), FrozenTraining(model, call, where)
        )

    def _keras_step(self, model: Any, data: Any, frame: Any, label: str) -> Any:
        from tfviz.program.kerasrun import built, prepare

        self._stop_if_pending()
        prepare(model, data, self.script)
        as_graph = not getattr(model, "run_eagerly", False)  # as Keras' fit runs it

        def entry() -> Entry:
            return self._started(
                Entry(model.train_step, (data,), {}, namespace(frame), label=label, as_graph=as_graph)
            )

        before = self.count
        if self.watch is not None and as_graph and before + 1 < self.step:
            # Watched, the batch runs as Keras runs it: a graph, with the check in it.
            self.watch.base = before
            self.entries.append(entry())
            self._direct = step = _graph_step(model)
            try:
                try:
                    result = step(data)
                finally:
                    self.entries.pop()
                    self._direct = None
                self.count = before + max(1, self._trace_hits)
                self._settled()
                return result
            except Exception:
                if not self._watch_fired():
                    raise
            # Stopped before its update: this batch, run once more eagerly, is the step captured.
            self.count, self.step = before, before + self.watch.fired.ordinal  # type: ignore[union-attr]
        self.entries.append(entry())
        try:
            if (
                self.watch is None
                and before + 1 == self.step
                and as_graph
                and built(model)
                and not hasattr(model.train_step, "python_function")
            ):
                # This batch holds the step: reach it in a trace of the step, as Keras runs it,
                # not eagerly (an eager forward pass keeps every activation on its tape: the
                # program's peak memory). A model its step builds is built eagerly, as before;
                # a train_step that is a tf.function of the user's is called as it is.
                graph_step = _graph_step(model)
                # Its first trace may create variables (Keras' global seed generator, made by
                # the step's first keras.random call): that trace is let finish, as for any
                # tf.function step (see _may_stop), so TensorFlow initialises them.
                self.entries[-1].function = graph_step
                self.entries[-1].first_trace = graph_step._variable_creation_config is None
                result = graph_step(data)  # counted as any tf.function the step calls
            else:
                result = self._eager_step(model, data, before)
        finally:
            self.entries.pop()
        self._stop_if_pending()
        return result

    def _eager_step(self, model: Any, data: Any, before: int) -> Any:
        """The batch's ``train_step`` run eagerly, as Keras' ``fit`` would with ``run_eagerly``;
        a step that runs only as a graph is run as Keras runs it."""
        try:
            return model.train_step(data)
        except Exception:  # see below, else the program's own error
            if self.count != before or getattr(model, "run_eagerly", False):
                raise
            # Keras runs this step as a graph, and some steps run only so (TensorFlow
            # refuses eagerly a tf.custom_gradient that uses variables it does not
            # declare): run it as Keras would.
            graph_step = _graph_step(model)
            if self.watch is not None:  # watched, this batch is the step: capture it from a trace
                self._capture_call(graph_step, (data,), {}, self.compiled.called(graph_step), None)
            return graph_step(data)

    @_final
    def strategy_run(
        self,
        strategy: Any,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        original: Callable[[], Any],
    ) -> Any:
        return original()

    @_final
    def graph_mode(self) -> None:
        where = user_line()
        raise Refused(
            AnalysisError(
                TF1_REFUSAL,
                file=where.file if where else self.script,
                line=where.line if where else None,
                code=where.code if where else "",
            )
        )

    # -- counting ------------------------------------------------------------
    def _count(self, hit: hooks.Hit) -> None:
        import tensorflow as tf

        entry = self.entries[0] if self.entries else None
        if other_replica():
            return  # tf.distribute runs the same step on every replica: count one
        if not tf.executing_eagerly():
            if entry is None:
                self.seen += 1
                if not in_function_graph():
                    self.graph_mode()  # tf.gradients in a tf.Graph of its own: TF1 style
                return  # a trace we did not start from an eager call (get_concrete_function)
            top = outermost_graph()
            if entry.graph is None:
                entry.graph = top
            elif entry.graph is not top:
                # TensorFlow traced the same step again (Keras traces a step twice): not a new
                # step, and not one more computation per call of the graph that will run
                return
        self.seen += 1
        self.count += 1
        if entry is not None:
            entry.hits += 1
            entry.inline.extend(f for f in self.nested if not any(f is g for g in entry.inline))
        if self.count >= self.step:
            capture = self._capture(hit, entry)
            if hit.api not in ("tape.gradient", "tf.gradients"):
                raise Reached(capture)
            self.pending = capture

    def _capture(self, hit: hooks.Hit, entry: Entry | None) -> StepCapture:
        import tensorflow as tf

        where = user_line()
        inert = hit.api == "exception"
        start = self.tapes.get(id(hit.tape)) if hit.tape is not None else None
        if entry is not None:
            ordinal = start.serial - entry.tapes_before if start is not None and not inert else None
            replay: Callable[[], Any] = CallReplay(
                entry.fn,
                entry.args,
                entry.kwargs,
                entry.hits,
                inert,
                autograph=entry.autograph,
                inline=entry.inline,
                tape_ordinal=ordinal,
            )
            ns = entry.frame_ns
            label = entry.label
        else:
            replay, ns = self._block_replay(hit, inert)
            label = ""
        objs = self._source_objects(hit)
        sources = name_sources(objs, ns, local_names([o for o, _ in objs]))
        if inert:
            if start is not None:
                where = start.opened_at()
            err = hit.error
            desc = f"{type(err).__name__} while a GradientTape recorded"
        else:
            desc = hit.api
        if where is not None:
            desc += f" at {os.path.basename(where.file)}:{where.line}"
        elif entry is not None and entry.called_at is not None:
            # A tf.distribute replica thread: TensorFlow maps no user line there.
            where = entry.called_at
            name = getattr(entry.fn, "__name__", "the step")
            desc += f" in {name}, called at {os.path.basename(where.file)}:{where.line}"
        if label:
            desc = f"{label}: {desc}"
        captured = StepCapture(hit.api, desc, replay, sources, where, hit.error, ns, count=self.count)
        captured.loss_scaler = self.scaler
        if entry is not None and entry.label.startswith("Model."):  # a Keras fit/train_on_batch batch
            captured.keras_model = getattr(entry.fn, "__self__", None)
        captured.as_graph = entry is not None and entry.as_graph
        if captured.as_graph and in_function_graph():
            captured.read_in_graph = handles_captured()
        captured.distributed = bool(tf.distribute.has_strategy())
        if hit.tape is not None:
            captured.enclosing_at = self._enclosing(hit.tape, start)
            captured.tape_id = id(hit.tape)
            captured.tape_persistent = bool(getattr(hit.tape, "_persistent", True))
            captured.tape_watches_accessed = bool(getattr(hit.tape, "_watch_accessed_variables", True))
            captured.watched_variables = list(hit.tape.watched_variables())
            captured.watched = {key for v in captured.watched_variables for key in tape_keys(v)}
            if start is not None:
                captured.tape_at = start.opened_at()
        captured.listings = list(self.listings.values())
        captured.frozen_training = list(self.frozen_training.values())
        return captured

    def _enclosing(self, tape: Any, start: TapeStart | None) -> Source | None:
        """Where the innermost tape opened before ``tape`` and still recording was opened:
        the step's gradient is then part of that tape's computation (MAML's inner step, a
        gradient penalty, a Hessian-vector product)."""
        if start is None:
            return None
        outer = [
            s
            for t in hooks.open_tapes()
            if t is not tape and (s := self.tapes.get(id(t))) is not None and s.serial < start.serial
        ]
        if not outer:
            return None
        return max(outer, key=lambda o: o.serial).opened_at()

    def _block_replay(self, hit: hooks.Hit, inert: bool) -> tuple[Callable[[], Any], dict[str, Any]]:
        start = self.tapes.get(id(hit.tape)) if hit.tape is not None else None
        if start is None:
            where = user_line()
            raise Refused(
                AnalysisError(
                    f"{hit.api} was called on a tape tfviz did not see start; it cannot replay that step",
                    file=where.file if where else self.script,
                    line=where.line if where else None,
                )
            )
        filename = start.frame.f_code.co_filename
        stop = None
        if not inert:
            f: types.FrameType | None = sys._getframe(1)
            while f is not None and f is not start.frame:
                f = f.f_back
            if f is None:
                raise Refused(
                    AnalysisError(
                        f"{hit.api} was called after the function that opened its tape returned;"
                        " tfviz cannot replay that step",
                        file=filename,
                        line=start.line,
                    )
                )
            stop = f.f_lineno
        try:
            nb = known_notebook(filename)  # read at this analysis's start: not parsed again
            if nb is not None:
                text = nb.source
            elif filename == self.script and self.source is not None:
                text = self.source  # the script itself, as the analysis read it once
            else:
                text = _source_of(filename)  # a module of the user's
            code, assigned = block_code(text, filename, start.line, stop)
        except AnalysisError as exc:
            raise Refused(exc) from None
        k = self.count - start.count
        # the tapes one `with` statement opens together (`with A() as a, B() as b:`) come in a row
        same_line = {
            t.serial
            for t in self.tapes.values()
            if t.frame is start.frame and t.line == start.line and t.count == start.count
        }
        ordinal = 0
        while start.serial - ordinal - 1 in same_line:
            ordinal += 1
        replay = BlockReplay(code, start.namespace, k, inert, assigned, None if inert else ordinal)
        return replay, start.namespace

    def _source_objects(self, hit: hooks.Hit) -> list[tuple[Any, Any]]:
        import tensorflow as tf

        if hit.api == "exception":
            objs = list(hit.tape.watched_variables()) + self.watched.get(id(hit.tape), [])
            return outside_objects(objs)
        watched = self.watched.get(id(hit.tape), []) if hit.tape is not None else None
        return outside_objects(
            tf.nest.flatten(hit.sources, expand_composites=False), live=True, watched=watched
        )
