"""Program mode: run the user's script as ``python SCRIPT ARGS`` would, until
its N-th gradient computation, and hand that step to the engine.

The program runs as ``__main__`` with its own ``sys.argv``. Every gradient
computation it reaches (``tape.gradient``/``jacobian``, ``tf.gradients``,
Keras ``fit``/``train_on_batch``, or an exception escaping a recording tape)
is counted; at the N-th the program is unwound before anything applies the
gradients, and the step is kept as a :mod:`tfviz.program.replay` callable plus the
sources it differentiates.

Counting follows what runs. A ``tf.function`` step's gradient calls are
seen while it is traced, once per call that traces: TensorFlow may trace a
call twice (Keras creates optimizer slots in a first trace it throws away),
and that retrace is the same step. Each later call that runs the traced
graph counts as many computations as that trace held, and a step that falls
inside such a call is captured from a new trace of it (:mod:`tfviz.program.stepcount`),
with the variables as the earlier calls left them. Keras'
``fit`` runs ``train_step`` eagerly batch by batch, so a model that Keras
would build inside its own trace is built the way a user's first call
builds it, and frozen copies made in ``build()`` stay visible.
"""

from __future__ import annotations

import collections
import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tfviz.engine.trace import raising_op
from tfviz.errors import AnalysisError
from tfviz.program import hooks
from tfviz.program.replay import BlockReplay, CallReplay, block_code, run_python
from tfviz.program.sources import name_sources, outside_objects
from tfviz.program.stepcount import CompiledStep, Steps, trace_again
from tfviz.report import Source
from tfviz.script.discover import FoundVariable
from tfviz.script.loader import Capture, compile_script, error_from_exception, read_source
from tfviz.script.scriptinfo import static_targets
from tfviz.script.sourcemap import code_at, user_source


@dataclass
class StepCapture:
    """The captured step: how to replay it and what it differentiates."""

    api: str
    description: str
    replay: Callable[[], Any]
    sources: list[FoundVariable]
    where: Source | None = None
    error: BaseException | None = None
    #: the names visible where the step was called, for naming what it uses
    namespace: dict[str, Any] = field(default_factory=dict)
    #: the sources exactly as the program passed them, flattened
    passed: list[Any] = field(default_factory=list)
    #: the stand-in gradients handed back to the program, in the same order
    handed: list[Any] = field(default_factory=list)
    #: what the optimizer was asked to update: (index into ``passed`` of the
    #: gradient it got, or None when that gradient was not one of ours, variable)
    updates: list[tuple[int | None, Any]] | None = None
    updates_known: bool = True
    update_at: Source | None = None
    #: the program runs the step as a graph, so the traced verdict is its truth
    as_graph: bool = False

    def stand_ins(self, hit: Any) -> Any:
        import tensorflow as tf

        self.passed = tf.nest.flatten(hit.sources)
        self.handed = [tf.zeros(s.shape, s.dtype) if hasattr(s, "shape") and s.shape.is_fully_defined()
                       else tf.zeros_like(s) for s in self.passed]
        return tf.nest.pack_sequence_as(hit.sources, self.handed)

    def record_update(self, grads: list[Any], variables: list[Any], where: Source | None) -> None:
        index = {id(g): i for i, g in enumerate(self.handed)}
        self.updates = [(index.get(id(g)), v) for g, v in zip(grads, variables)]
        self.update_at = where


class Reached(BaseException):
    """The N-th gradient computation: unwinds the user's program."""

    def __init__(self, capture: StepCapture) -> None:
        super().__init__("tfviz captured the gradient step")
        self.capture = capture


class _Refused(BaseException):
    def __init__(self, error: AnalysisError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass
class _Entry:
    """An outermost step call: a tf.function called eagerly, or a Keras batch."""

    fn: Callable
    args: tuple
    kwargs: dict
    frame_ns: dict[str, Any]
    label: str = ""
    autograph: bool = True
    graph: Any = None
    hits: int = 0
    called_at: Source | None = None
    #: the real program runs this step as a graph (tf.function, Keras fit)
    as_graph: bool = True
    #: nested tf.functions around its gradient calls: the replay runs them as Python
    inline: list[Any] = field(default_factory=list)


@dataclass
class _TapeStart:
    frame: Any
    line: int
    namespace: dict[str, Any]
    count: int


class RunHandler:
    """Counts gradient computations while the program runs."""

    def __init__(self, step: int, script: str) -> None:
        self.step, self.script, self.count = step, script, 0
        #: the captured step, between its gradient call and the optimizer's update
        self.pending: StepCapture | None = None
        self.entries: list[_Entry] = []
        self.tapes: collections.OrderedDict[int, _TapeStart] = collections.OrderedDict()
        self.watched: dict[int, list[Any]] = {}
        #: outermost tf.functions and what each call runs unseen (see tfviz.program.stepcount)
        self.compiled = Steps()
        #: the nested tf.functions being called (traced or inlined) right now, innermost last
        self.nested: list[Any] = []
        #: tracing a call again to capture the step in it (see _capture_call)
        self.retracing = False
        #: gradient calls seen in Python, a retrace's included: what a nested trace held
        self.seen = 0

    # -- tapes ---------------------------------------------------------------
    def tape_entered(self, tape: Any, frame: Any) -> bool:
        self._stop_if_pending()
        self.tapes[id(tape)] = _TapeStart(frame, frame.f_lineno, _namespace(frame), self.count)
        while len(self.tapes) > 64:
            self.tapes.popitem(last=False)
        self.watched.pop(id(tape), None)
        return True

    def tape_exited(self, tape: Any, error: BaseException | None) -> None:
        if error is None or not isinstance(error, Exception) or raising_op(error) is None:
            return
        self._count(hooks.Hit(api="exception", tape=tape, target=None, sources=None, error=error))

    def tape_watched(self, tape: Any, tensors: Any) -> None:
        import tensorflow as tf

        self.watched.setdefault(id(tape), []).extend(tf.nest.flatten(tensors))

    def gradient(self, hit: hooks.Hit, original: Callable[[], Any]) -> Any:
        self._stop_if_pending()
        self._count(hit)
        if self.pending is None:
            return original()
        # The captured step: its gradients are stand-ins (zeros shaped like the
        # sources), so the program reaches its optimizer call at no cost, and
        # what it applies them to can be matched by identity.
        return self.pending.stand_ins(hit)

    def optimizer_apply(self, optimizer, grads, variables, original):
        if self.pending is None or _other_replica():
            return original()
        self.pending.record_update(grads, variables, _where())
        raise Reached(self.pending)

    def variable_assigned(self, variable: Any) -> None:
        if self.pending is not None and not _other_replica():
            self.pending.updates_known = False  # a hand-written update: which ones is unknown
            raise Reached(self.pending)

    def _stop_if_pending(self) -> None:
        if self.pending is not None and not _other_replica():
            raise Reached(self.pending)

    # -- steps ---------------------------------------------------------------
    def function_called(self, fn, args, kwargs, frame, original):
        import tensorflow as tf

        if self.entries:
            return self._nested_call(fn, args, kwargs, original)
        if not tf.executing_eagerly():
            return original()  # a trace we did not start from an eager call (get_concrete_function)
        self._stop_if_pending()
        compiled = self.compiled.called(fn)

        def entry(label: str = "") -> _Entry:
            return _Entry(fn.python_function, args, kwargs, _namespace(frame), label=label,
                          autograph=bool(getattr(fn, "_autograph", True)),
                          called_at=_frame_source(frame))

        if compiled.per_call and self.count + compiled.per_call >= self.step:
            # The step is one this call would run as a graph, unseen: trace it instead.
            self._capture_call(fn, args, kwargs, compiled, entry(f"{compiled.name}, call {compiled.calls}"))
        before, traces = self.count, compiled.traces()
        self.entries.append(entry())
        try:
            result = original()
        finally:
            self.entries.pop()
        self.count += compiled.ran(self.count - before, traces)
        self._stop_if_pending()  # the step ran without calling an optimizer
        return result

    def _capture_call(self, fn: Any, args: tuple, kwargs: dict, compiled: CompiledStep,
                      entry: _Entry | None) -> None:
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
            self.entries.append(entry)
        else:
            self.nested.append(fn)
        step = self.entries[0]
        self.retracing = True
        try:
            trace_again(fn, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - the user's step, traced once more
            where = step.called_at
            raise _Refused(AnalysisError(
                f"tfviz traced call {compiled.calls} of {compiled.name} again to capture gradient"
                f" computation {self.step}, and the trace raised {type(exc).__name__}: {exc}",
                file=where.file if where else self.script, line=where.line if where else None,
                code=where.code if where else "")) from None
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

    def _nested_call(self, fn: Any, args: tuple, kwargs: dict, original: Callable[[], Any]) -> Any:
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
        top = _outermost_graph()
        if entry.graph is None:
            entry.graph = top
        elif entry.graph is not top:
            return
        self.count += n
        entry.hits += n

    def keras_fit(self, model, p, frame, original):
        if self.entries:
            return original()
        import keras

        from tfviz.program.kerasrun import fit_batches

        for i, data in enumerate(fit_batches(model, p, self.script)):
            label = f"Model.fit → {type(model).__name__}.train_step, batch {i + 1}"
            self._keras_step(model, data, frame, label)
        return keras.callbacks.History()

    def keras_train_on_batch(self, model, p, frame, original):
        if self.entries:
            return original()
        from tfviz.program.kerasrun import batch_of

        logs = self._keras_step(model, batch_of(p), frame,
                                f"Model.train_on_batch → {type(model).__name__}.train_step")
        if p.get("return_dict"):
            return logs
        values = list(logs.values()) if isinstance(logs, dict) else logs
        return values[0] if isinstance(values, list) and len(values) == 1 else values

    def _keras_step(self, model, data, frame, label: str) -> Any:
        from tfviz.program.kerasrun import prepare

        self._stop_if_pending()
        prepare(model, data, self.script)
        self.entries.append(_Entry(model.train_step, (data,), {}, _namespace(frame), label=label,
                                   as_graph=not getattr(model, "run_eagerly", False)))
        try:
            result = model.train_step(data)
        finally:
            self.entries.pop()
        self._stop_if_pending()
        return result

    def strategy_run(self, strategy, fn, args, kwargs, original):
        return original()

    def graph_mode(self) -> None:
        where = _where()
        raise _Refused(AnalysisError(
            "the program uses TensorFlow 1 graph mode (disable_eager_execution, or tf.gradients in"
            " a tf.Graph run by a Session); tfviz diagnoses TensorFlow 2 programs, where"
            " tape.gradient, tf.function and Keras run eagerly by default",
            file=where.file if where else self.script, line=where.line if where else None,
            code=where.code if where else ""))

    # -- counting ------------------------------------------------------------
    def _count(self, hit: hooks.Hit) -> None:
        import tensorflow as tf

        entry = self.entries[0] if self.entries else None
        if _other_replica():
            return  # tf.distribute runs the same step on every replica: count one
        self.seen += 1
        if not tf.executing_eagerly():
            if entry is None:
                if not _in_function_graph():
                    self.graph_mode()  # tf.gradients in a tf.Graph of its own: TF1 style
                return  # a trace we did not start from an eager call (get_concrete_function)
            top = _outermost_graph()
            if entry.graph is None:
                entry.graph = top
            elif entry.graph is not top:
                return  # TensorFlow traced the same step again: not a new step
        self.count += 1
        if entry is not None:
            entry.hits += 1
            entry.inline.extend(f for f in self.nested if not any(f is g for g in entry.inline))
        if self.count >= self.step:
            capture = self._capture(hit, entry)
            if hit.api not in ("tape.gradient", "tf.gradients"):
                raise Reached(capture)
            self.pending = capture

    def _capture(self, hit: hooks.Hit, entry: _Entry | None) -> StepCapture:
        where = _where()
        inert = hit.api == "exception"
        if entry is not None:
            replay: Callable[[], Any] = CallReplay(entry.fn, entry.args, entry.kwargs, entry.hits, inert,
                                                   autograph=entry.autograph, inline=entry.inline)
            ns = entry.frame_ns
            label = entry.label
        else:
            replay, ns = self._block_replay(hit, inert)
            label = ""
        objs = self._source_objects(hit)
        sources = name_sources(objs, ns)
        if inert:
            start = self.tapes.get(id(hit.tape))
            if start is not None:
                where = Source(start.frame.f_code.co_filename, start.line,
                               code_at(start.frame.f_code.co_filename, start.line))
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
        captured = StepCapture(hit.api, desc, replay, sources, where, hit.error, ns)
        captured.as_graph = entry is not None and entry.as_graph
        return captured

    def _block_replay(self, hit: hooks.Hit, inert: bool) -> tuple[Callable[[], Any], dict]:
        start = self.tapes.get(id(hit.tape)) if hit.tape is not None else None
        if start is None:
            where = _where()
            raise _Refused(AnalysisError(
                f"{hit.api} was called on a tape tfviz did not see start; it cannot replay that step",
                file=where.file if where else self.script, line=where.line if where else None))
        filename = start.frame.f_code.co_filename
        stop = None
        if not inert:
            f = sys._getframe(1)
            while f is not None and f is not start.frame:
                f = f.f_back
            if f is None:
                raise _Refused(AnalysisError(
                    f"{hit.api} was called after the function that opened its tape returned;"
                    " tfviz cannot replay that step", file=filename, line=start.line))
            stop = f.f_lineno
        try:
            code, assigned = block_code(read_source(filename), filename, start.line, stop)
        except AnalysisError as exc:
            raise _Refused(exc) from None
        k = self.count - start.count
        return BlockReplay(code, start.namespace, k, inert, assigned), start.namespace

    def _source_objects(self, hit: hooks.Hit) -> list[Any]:
        import tensorflow as tf

        if hit.api == "exception":
            objs = list(hit.tape.watched_variables()) + self.watched.get(id(hit.tape), [])
        else:
            objs = tf.nest.flatten(hit.sources, expand_composites=False)
        return outside_objects(objs)


def _frame_source(frame: Any) -> Source:
    line = frame.f_lineno
    return Source(frame.f_code.co_filename, line, code_at(frame.f_code.co_filename, line))


def _other_replica() -> bool:
    import tensorflow as tf

    ctx = tf.distribute.get_replica_context()
    if ctx is None:
        return False
    try:
        return bool(tf.get_static_value(ctx.replica_id_in_sync_group))
    except Exception:  # noqa: BLE001 - the default replica context
        return False


def _namespace(frame: Any) -> dict[str, Any]:
    ns = dict(frame.f_globals)
    if frame.f_code.co_name != "<module>":
        ns.update(frame.f_locals)
    return ns


def _in_function_graph() -> bool:
    from tensorflow.python.framework import func_graph, ops

    return isinstance(ops.get_default_graph(), func_graph.FuncGraph)


def _outermost_graph() -> Any:
    from tensorflow.python.framework import ops

    g = ops.get_default_graph()
    while getattr(g, "outer_graph", None) is not None and hasattr(g.outer_graph, "outer_graph"):
        g = g.outer_graph
    return g


def _where() -> Source | None:
    """The user's line that asked for the gradient (TensorFlow maps AutoGraph's
    generated code back to it, in the thread that started the trace)."""
    from tensorflow.python.util import tf_stack

    return user_source(tf_stack.extract_stack())


def run_program(path: str, args: list[str], step: int, capture: Capture) -> StepCapture:
    """Run the script at ``path`` as ``__main__`` until its ``step``-th gradient
    computation; raise AnalysisError when it never gets there."""
    path = os.path.abspath(path)
    code = compile_script(path)
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__dict__["__builtins__"] = __builtins__
    folder = os.path.dirname(os.path.realpath(path))  # as `python script.py` sets sys.path[0]
    if folder not in sys.path:
        sys.path.insert(0, folder)
    saved_main, saved_argv = sys.modules.get("__main__"), sys.argv
    sys.modules["__main__"] = module
    sys.argv = [path, *args]
    handler = RunHandler(step, path)
    hooks.install()
    try:
        with capture.active(), hooks.handling(handler):
            exec(code, module.__dict__)  # noqa: S102 - running the user's program is the point
    except Reached as reached:
        return reached.capture
    except _Refused as refused:
        raise refused.error from None
    except SystemExit as exc:
        if handler.pending is not None:
            return handler.pending
        raise _exit_error(exc, path, capture, handler.count) from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's program may raise anything
        if handler.pending is not None:
            return handler.pending  # it failed after its captured step: nothing lost
        what = ("the program raised before its first gradient computation" if handler.count == 0
                else f"the program raised after {handler.count} gradient computation(s)")
        raise error_from_exception(exc, what, path) from None
    finally:
        sys.argv = saved_argv
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    if handler.pending is not None:
        return handler.pending
    done = "ran to the end without computing a gradient" if handler.count == 0 else (
        f"ran to the end after {handler.count} gradient computation(s); --step {step} asks for more")
    candidates = tuple(static_targets(read_source(path)))
    if candidates:
        done += (f". Functions it could differentiate instead: {', '.join(candidates)}"
                 " (choose one with --target NAME)")
    raise AnalysisError(f"the program {done}", file=path, detail=_tail(capture), candidates=candidates)


def _exit_error(exc: SystemExit, path: str, capture: Capture, count: int) -> AnalysisError:
    code = exc.code
    status = code if isinstance(code, int) or code is None else 1
    when = "before its first gradient computation" if count == 0 else f"after {count} gradient computation(s)"
    msg = f"the program exited (status {status or 0}) {when}"
    if isinstance(code, str):
        msg += f": {code}"
    hint = ""
    err = capture.err.getvalue()
    if status == 2 and "usage:" in err:
        hint = "; it rejected its command line: pass its arguments after --, as in tfviz check SCRIPT -- ARGS"
    return AnalysisError(msg + hint, file=path, detail=_tail(capture))


def _tail(capture: Capture, lines: int = 15) -> str:
    parts = []
    for name, buf in (("stdout", capture.out), ("stderr", capture.err)):
        text = buf.getvalue().rstrip().splitlines()[-lines:]
        if text:
            parts.append(f"last lines of {name}:\n" + "\n".join("  " + t for t in text))
    return "\n".join(parts)
