"""Running the user's script as ``python SCRIPT ARGS`` would, under the step handler,
and saying why it ended when it never reached the chosen gradient step."""

from __future__ import annotations

import os
import queue
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

from tfviz.errors import AnalysisError
from tfviz.program import cluster, hooks, keras_state, signals
from tfviz.program.capture import Reached, Refused, StepCapture
from tfviz.program.run import RunHandler
from tfviz.program.watch import RanToEnd, Watch
from tfviz.script.discover import is_tf_function
from tfviz.script.loader import Script, error_from_exception
from tfviz.script.notebook import namespace as notebook_namespace
from tfviz.script.quiet import as_python_has_it
from tfviz.script.scriptinfo import losses_with_arguments, static_targets
from tfviz.script.streams import Capture


def run_program(
    script: Script | str, args: list[str], step: int, capture: Capture, watch: Watch | None = None
) -> StepCapture:
    """Run the script (a :class:`Script`, or a path to read) as ``__main__`` until its ``step``-th gradient
    computation; raise AnalysisError when it never gets there. With a ``watch``,
    the step captured is the first where its condition fires, if that comes
    first; a watched program that ends before either raises :class:`RanToEnd`.

    The program runs in a thread of its own. At its step that thread stops
    where it stands, inside tfviz's hook, and never runs again: the process
    ends (the worker exits without returning into it) while the program's
    stack is still alive. Unwinding it instead would run its ``except`` and
    ``finally`` blocks, and a program that catches ``BaseException`` would
    carry on training, saving and retrying.
    """
    if isinstance(script, str):
        script = Script.read(script)
    path, code = script.path, script.code
    if refusal := cluster.parameter_server_refusal(os.environ.get("TF_CONFIG")):
        raise AnalysisError(refusal, file=path)
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__dict__["__builtins__"] = __builtins__
    module.__dict__.update(notebook_namespace(path))  # a notebook's display()
    folder = os.path.dirname(os.path.realpath(path))  # as `python script.py` sets sys.path[0]
    if folder not in sys.path:
        sys.path.insert(0, folder)
    saved_main, saved_argv = sys.modules.get("__main__"), sys.argv
    sys.modules["__main__"] = module
    sys.argv = [path, *args]
    ended: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
    handler = RunHandler(
        step, path, stopped=lambda end: _stop_here(end, ended), watch=watch, source=script.source
    )
    hooks.install()

    callbacks = _op_callbacks()

    def settle() -> None:
        from tensorflow.python.framework import op_callbacks

        for callback in callbacks:
            op_callbacks.remove_op_callback(callback)

    handler.settle = settle

    def program() -> None:
        from tensorflow.python.framework import op_callbacks

        for callback in callbacks:  # TensorFlow keeps op callbacks per thread
            op_callbacks.add_op_callback(callback)
        try:
            exec(code, module.__dict__)  # noqa: S102 - running the user's program is the point
        except BaseException as exc:  # noqa: BLE001 - the user's program may raise anything
            ended.put(exc)
        else:
            ended.put(None)

    try:
        with capture.active(), hooks.handling(handler), signals.main_thread_only(), as_python_has_it():
            outcome = _run_in_thread(program, ended)
    finally:
        sys.argv = saved_argv
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    if isinstance(outcome, Reached):
        keras_state.adopt(outcome.keras_settings)
        return outcome.capture
    if isinstance(outcome, Refused):
        raise outcome.error from None
    if isinstance(outcome, SystemExit):
        if handler.pending is not None:
            return handler.pending
        if watch is not None and outcome.code in (None, 0) and handler.count > 0:
            raise RanToEnd(handler.count) from None
        raise _exit_error(outcome, path, capture, handler.count) from None
    if isinstance(outcome, KeyboardInterrupt):
        raise outcome
    if outcome is not None:
        if handler.pending is not None:
            return handler.pending  # it failed after its captured step: nothing lost
        if (lost := cluster.lost_peer(outcome, handler.count)) is not None:
            where = error_from_exception(outcome, "", path)
            raise AnalysisError(lost, file=where.file, line=where.line, code=where.code) from None
        what = (
            "the program raised before its first gradient computation"
            if handler.count == 0
            else f"the program raised after {handler.count} gradient computation(s)"
        )
        raise error_from_exception(outcome, what, path) from None
    if handler.pending is not None:
        return handler.pending
    if watch is not None and handler.count > 0:
        raise RanToEnd(handler.count)  # watched, and no condition met: a watch that saw no step fails
    done = (
        "ran to the end without computing a gradient"
        if handler.count == 0
        else (f"ran to the end after {handler.count} gradient computation(s); --step {step} asks for more")
    )
    for call in handler.frozen_training.values():
        done += f"; {call.said()}"
    if handler.count == 0 and handler.own_checks:
        done += (
            f"; its only gradient step ran inside its own tfviz.check() at"
            f" {handler.own_checks[0].label()}, which stops the step before its update as it does"
            " under python: that is the program's check, not a step of its training (call the"
            " step itself for tfviz check to stop at it)"
        )
    source = script.tree
    candidates = tuple(static_targets(source))
    if candidates:
        done += (
            f". Functions it could differentiate instead: {', '.join(candidates)}"
            " (choose one with --target NAME)"
        )
    elif handler.count == 0 and (needing := losses_with_arguments(source)):
        done += (
            f". {needing[0]} takes arguments, and tfviz calls a target with none: wrap it in"
            " a function that passes them (def target(): return "
            f"{needing[0].split('(')[0]}(...)) and choose that with --target target"
        )
    raise AnalysisError(f"the program {done}", file=path, detail=_tail(capture), candidates=candidates)


def _op_callbacks() -> list[Callable[..., Any]]:
    """The op callbacks this thread has (tfviz's origin recorder): the program's
    thread must run them too, or eager copies of weights made there go unseen."""
    from tensorflow.python.eager import context

    return list(context.context().op_callbacks)


#: the program thread's stack: as deep as a main thread's usually is, and more
_STACK_BYTES = 256 * 1024 * 1024


def run_step_function(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], capture: Capture
) -> StepCapture:
    """Call a training-step function of the caller's own process, ``fn(*args, **kwargs)``,
    in this thread, and capture its first gradient computation as :func:`run_program`
    captures a program's: the function is unwound at its update, before anything is applied
    (a step function, unlike a program, has no ``except BaseException`` to carry on in). The
    hooks stay installed; :func:`tfviz.api.untouched` takes them off."""
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "python_function", None), "__code__", None)
    path = code.co_filename if code is not None else "<step function>"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "the step function")
    handler = RunHandler(1, path)  # no ``stopped``: its end unwinds to here
    if is_tf_function(fn) and hasattr(fn, "_clone"):
        # A tf.function that has run (a notebook that trained with it) runs its graph, and
        # none of the step's Python, so no gradient computation would be seen and its update
        # would be applied: a fresh copy with the same options is traced, as its first call was.
        fn = fn._clone(None)
    hooks.install()
    try:
        # the warnings and log levels the caller has, as its own call of the step would
        with capture.active(), hooks.handling(handler), as_python_has_it():
            fn(*args, **kwargs)
    except Reached as end:
        return end.capture
    except Refused as end:
        raise end.error from None
    except Exception as exc:  # noqa: BLE001 - the user's step may raise anything
        if handler.pending is not None:
            return handler.pending  # it failed after its captured step: nothing lost
        raise error_from_exception(
            exc, f"{name} raised before its first gradient computation", path
        ) from None
    if handler.pending is not None:
        return handler.pending
    raise AnalysisError(
        f"{name} returned without computing a gradient: pass a function that takes a training"
        " step (tape.gradient, then the optimizer), or one that returns the loss, with no arguments",
        file=path,
        line=code.co_firstlineno if code is not None else None,
    )


def _run_in_thread(
    program: Callable[[], None], ended: queue.SimpleQueue[BaseException | None]
) -> BaseException | None:
    """Start the program and wait for how it ended (Ctrl-C still reaches us)."""
    old = threading.stack_size()
    try:
        threading.stack_size(_STACK_BYTES)
    except (ValueError, RuntimeError):  # pragma: no cover - a platform without it
        pass
    try:
        thread = threading.Thread(target=program, name="tfviz-program", daemon=True)
        thread.start()
    finally:
        threading.stack_size(old)
    while True:
        try:
            return ended.get(timeout=0.2)
        except queue.Empty:
            continue


def _stop_here(end: BaseException, ended: queue.SimpleQueue[BaseException | None]) -> None:
    """End the program at this hook: hand over how it ended, then wait forever.

    The locks the program's frames hold (a tf.function being traced holds its
    own) are let go first, so the analysis may trace and call the same
    functions; this thread never runs on to release them. So are the tapes
    they hold: a tape's recording keeps every activation of the forward pass
    alive (1.4 GB for ResNet50 at batch 8), and the analysis replays the step
    with tapes of its own.
    """
    _release_held_locks(sys._getframe(1))
    _release_tape_recordings(sys._getframe(1))
    if isinstance(end, Reached):
        end.keras_settings = keras_state.settings()
    ended.put(end)
    threading.Event().wait()


def _release_tape_recordings(frame: Any) -> None:
    """Drop what the tapes in the parked stack recorded (their ``_tape``): never read again,
    since this thread never returns to them."""
    import tensorflow as tf

    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, tf.GradientTape) and not value._recording:
                value.watched_variables()  # kept by the tape itself, for whoever still asks
                value._tape = None  # what GradientTape.__exit__ leaves for gradient()
        frame = frame.f_back


def _release_held_locks(frame: Any) -> None:
    rlock = type(threading.RLock())
    seen: set[int] = set()
    while frame is not None:
        for value in list(frame.f_locals.values()):
            try:
                attrs = object.__getattribute__(value, "__dict__")
            except (AttributeError, TypeError):
                attrs = {}
            for obj in (value, attrs.get("_lock"), attrs.get("lock")):
                # _is_owned and _release_save: RLock's own, left out of its stubs
                if isinstance(obj, rlock) and id(obj) not in seen and obj._is_owned():  # type: ignore[attr-defined]
                    seen.add(id(obj))
                    obj._release_save()  # type: ignore[attr-defined]
        frame = frame.f_back


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
