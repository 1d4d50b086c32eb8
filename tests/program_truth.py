"""TensorFlow's own answer at a training program's N-th gradient computation.

An independent ground truth for program mode, computed without tfviz: the
program runs as ``python PATH ARGS...`` would (as ``__main__``, with
``sys.argv = [PATH, *ARGS]``, in the script's folder) while
``tf.GradientTape.gradient`` and ``GradientTape.__exit__`` are patched to
observe what TensorFlow returns. At the N-th gradient computation *that
actually executes*, each source is classified from TensorFlow's real result:

``disconnected``  the gradient is None
``broken``        computing it raises
``nan``           it has a NaN or Inf
``zero``          it is exactly zero everywhere
``connected``     anything else

and the program is stopped there.

What counts as one gradient computation, in the order it really runs:

* an eager ``tape.gradient`` call;
* one *execution* of a ``tape.gradient`` call traced inside a ``tf.function``
  (Keras ``fit``'s train step included). A trace that ``tf.function`` throws
  away (Keras 3 creates optimizer slots in the first trace, then retraces) is
  never executed, so it is not counted; each trace's gradient calls are still
  listed under ``traces`` with what the trace saw (None or a tensor), and
  ``executed`` tells whether that call's observation ran (False for a trace
  ``tf.function`` threw away, and for calls after the stop). The values are
  observed by a ``tf.numpy_function`` that the patch adds to the traced
  graph, with a control dependency from each returned gradient, so the step
  is stopped before any optimizer applies them;
* a ``tape.gradient`` call made while another one runs (``tf.recompute_grad``
  re-runs its block under its own tape during the outer backward pass) is
  part of that outer computation and is not counted;
* a ``tape.gradient`` call that raises (eager or while tracing): ``broken``
  for the sources whose own gradient raises;
* an exception escaping a ``with tf.GradientTape()`` block while it records
  (seed 1: calling the SVD ``tf.function`` under the tape raises from
  ``_SvdGrad``): kind ``exception``, ``broken`` for every watched tensor and
  variable, with the exception.

Two options change how Keras ``fit``/``train_on_batch``/``evaluate`` run (both
off by default, which is the program exactly as it runs):

``keras_prebuild=True``  a model that is not built yet is first called eagerly,
    outside any tape, on the first batch, as a user's first call would build
    it; then Keras runs its traced step as usual. This is the procedure
    tfviz's program mode follows for ``fit``; for seed 2 it makes the
    ``build()``-time reshape a frozen copy in every trace.
``keras_eager=True``     ``run_eagerly=True``. Note that Keras then builds the
    model *inside* the first step's tape, so a ``build()``-time copy of a
    weight is connected at step 1 and disconnected from step 2 on.

``no_jit=True``  (``--no-jit``) every ``tf.function`` is created with
    ``jit_compile=False`` (a ``jit_compile=True`` step cannot run the observing
    numpy_function under XLA). The step then runs without XLA; which sources
    get a gradient does not depend on XLA. Off by default.

Not covered: ``jacobian``, ``tf.gradients``, ``jit_compile=True`` steps
(without ``--no-jit``).

    python tests/program_truth.py resources/examples/program_gan.py --step 2
    python tests/program_truth.py resources/examples/program_argv.py -- --lr 0.1
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
import traceback
import warnings
from typing import Any

from truth_common import GraphStop, Stop, error_text, no_jit_patch, patched, shape_of  # run as a script


def _tf_name(obj) -> str | None:
    path = getattr(obj, "path", None)  # Keras 3 variable
    if isinstance(path, str):
        return path
    try:
        return obj.name  # tf.Variable, graph tensor
    except (AttributeError, ValueError):
        return None  # eager tensor


def _find_in_globals(obj, namespace: dict) -> str | None:
    """The first `name`, `name[i]` or `name['key']` in the program's globals that is `obj`."""
    for key, value in list(namespace.items()):
        if key.startswith("__"):
            continue
        if value is obj:
            return key
        if isinstance(value, list | tuple):
            for i, item in enumerate(value):
                if item is obj:
                    return f"{key}[{i}]"
        elif isinstance(value, dict):
            for k, item in value.items():
                if item is obj:
                    return f"{key}[{k!r}]"
    return None


def _program_globals() -> dict:
    main = sys.modules.get("__main__")
    return getattr(main, "__dict__", {}) or {}


def _describe(sources: list) -> list[dict]:
    namespace = _program_globals()
    described = []
    for i, source in enumerate(sources):
        expr = _find_in_globals(source, namespace)
        name = _tf_name(source) or expr or f"sources[{i}]"
        dtype = getattr(source, "dtype", None)
        entry = {"name": name, "shape": shape_of(source), "dtype": getattr(dtype, "name", dtype)}
        if expr is not None and expr != name:
            entry["expr"] = expr
        described.append(entry)
    return described


def _status_of_value(value) -> str:
    import numpy as np

    if value is None:
        return "disconnected"
    array = np.asarray(value)
    if not np.all(np.isfinite(array)):
        return "nan"
    if not np.any(array):
        return "zero"
    return "connected"


def _norm_of_value(value) -> float | None:
    """The gradient's L2 norm, as the program's own gradient call returned it (None: no gradient)."""
    import numpy as np

    if value is None:
        return None
    return float(np.linalg.norm(np.asarray(value, dtype=np.float64)))


def _where(script: str) -> str | None:
    """`file:line` of the innermost frame of the program's own file on the current stack."""
    script = os.path.realpath(script)
    for frame_summary in reversed(traceback.extract_stack()):
        if os.path.realpath(frame_summary.filename) == script:
            return f"{os.path.basename(script)}:{frame_summary.lineno}"
    return None


def _where_tb(script: str, tb) -> str | None:
    script = os.path.realpath(script)
    hits = [f for f in traceback.extract_tb(tb) if os.path.realpath(f.filename) == script]
    return f"{os.path.basename(script)}:{hits[-1].lineno}" if hits else None


class _Observer:
    def __init__(self, script: str, step: int):
        self.script = script
        self.step = step
        self.count = 0  # gradient computations that ran (or raised) so far
        self.result: dict | None = None
        self.traces: list[dict] = []
        self._last_hook: dict[int, Any] = {}  # graph id -> last hook op, to keep them in program order
        self._depth = 0  # gradient calls in progress (tf.recompute_grad calls tape.gradient inside one)

    # -- events --------------------------------------------------------------------------------
    def _event(self, record: dict) -> bool:
        """Count one gradient computation; True (and record it) if it is the requested one."""
        self.count += 1
        if self.count == self.step and self.result is None:
            record["step"] = self.count
            self.result = record
            return True
        return False

    # -- patched GradientTape.gradient ------------------------------------------------------------
    def gradient(self, original, tape, target, sources, output_gradients, unconnected_gradients):
        def call(srcs):
            return original(tape, target, srcs, output_gradients, unconnected_gradients)

        if self.result is not None or self._depth:
            return call(sources)  # after the stop, or inside another computation's backward pass
        self._depth += 1
        try:
            return self._observe(tape, call, sources)
        finally:
            self._depth -= 1

    def _observe(self, tape, call, sources):
        import tensorflow as tf

        flat = tf.nest.flatten(sources)
        described = _describe(flat)
        where = _where(self.script)
        eager = tf.executing_eagerly()
        try:
            result = call(sources)
        except Exception as exc:
            statuses = self._probe(tape, call, flat, eager)
            for entry, (status, error) in zip(described, statuses):
                entry["status"] = status
                if error:
                    entry["error"] = error
            record = {
                "kind": "tape.gradient",
                "mode": "eager" if eager else "graph",
                "where": where,
                "sources": described,
                "error": error_text(exc),
            }
            if not eager:
                self.traces.append({**record, "executed": False})
            if self._event(record):
                raise Stop from exc
            raise
        flat_grads = tf.nest.flatten(result, expand_composites=False)
        if eager:
            for entry, grad in zip(described, flat_grads):
                entry["status"] = _status_of_value(self._dense(grad))
                entry["norm"] = _norm_of_value(tf.convert_to_tensor(grad) if grad is not None else None)
            record = {
                "kind": "tape.gradient",
                "mode": "eager",
                "where": where,
                "sources": described,
                "error": None,
            }
            if self._event(record):
                raise Stop
            return result
        return self._hook_graph(result, flat_grads, described, where)

    def _probe(self, tape, call, flat, eager) -> list[tuple[str, str | None]]:
        """Per-source status after the whole call raised (the tape is still usable then)."""
        persistent = tape._persistent
        tape._persistent = True  # probe source by source without releasing the tape
        statuses = []
        try:
            for source in flat:
                try:
                    grad = call([source])[0]
                except Exception as exc:  # noqa: BLE001 - TensorFlow's answer, whatever it raises
                    statuses.append(("broken", error_text(exc)))
                    continue
                if grad is None:
                    statuses.append(("disconnected", None))
                else:
                    statuses.append((_status_of_value(self._dense(grad)) if eager else "connected", None))
        finally:
            tape._persistent = persistent
        return statuses

    @staticmethod
    def _dense(grad):
        import tensorflow as tf

        if isinstance(grad, tf.IndexedSlices):
            return grad.values
        return grad

    def _hook_graph(self, result, flat_grads, described, where):
        """Inside a trace: note what the trace sees, and observe the values when it executes."""
        import tensorflow as tf

        trace = {
            "kind": "tape.gradient",
            "mode": "graph",
            "graph": getattr(tf.compat.v1.get_default_graph(), "name", None),
            "where": where,
            "sources": [
                {**d, "status": "disconnected" if g is None else "tensor"}
                for d, g in zip(described, flat_grads)
            ],
            "executed": False,
        }
        self.traces.append(trace)
        present = [i for i, g in enumerate(flat_grads) if g is not None]

        def observe(*values):
            trace["executed"] = True
            if self.result is not None:
                return True
            record = {"kind": "tape.gradient", "mode": "graph", "where": where, "error": None}
            sources = [dict(d) for d in described]
            for entry in sources:
                entry["status"] = "disconnected"
            for i, value in zip(present, values):
                sources[i]["status"] = _status_of_value(value)
                sources[i]["norm"] = _norm_of_value(value)
            record["sources"] = sources
            if self._event(record):
                raise GraphStop("program_truth: step observed")
            return True

        graph = tf.compat.v1.get_default_graph()
        deps = [self._last_hook[id(graph)]] if id(graph) in self._last_hook else []
        with tf.control_dependencies(deps):
            flag = tf.numpy_function(
                observe,
                # an IndexedSlices as the optimizer applies it: its rows summed into a dense tensor
                [tf.convert_to_tensor(flat_grads[i]) for i in present],
                tf.bool,
                stateful=True,
                name="program_truth",
            )
        self._last_hook[id(graph)] = flag
        guarded = []
        with tf.control_dependencies([flag]):
            for g in flat_grads:
                if g is None:
                    guarded.append(None)
                elif isinstance(g, tf.IndexedSlices):
                    guarded.append(tf.IndexedSlices(tf.identity(g.values), g.indices, g.dense_shape))
                else:
                    guarded.append(tf.identity(g))
        return tf.nest.pack_sequence_as(result, guarded)

    # -- patched GradientTape.__exit__ ------------------------------------------------------------
    def tape_exit(self, tape, exc_type, exc, tb):
        if (
            self.result is not None
            or exc_type is None
            or not issubclass(exc_type, Exception)
            or isinstance(exc, GraphStop)
            or not getattr(tape, "_recording", False)
        ):
            return
        import tensorflow as tf

        sources, seen = [], set()
        for obj in list(getattr(tape, "_truth_watched", [])) + list(tape.watched_variables()):
            if id(obj) not in seen:
                seen.add(id(obj))
                sources.append(obj)
        described = _describe(sources)
        for entry in described:
            entry["status"] = "broken"
        record = {
            "kind": "exception",
            "mode": "eager" if tf.executing_eagerly() else "graph",
            "where": _where_tb(self.script, tb) or _where(self.script),
            "sources": described,
            "error": error_text(exc),
        }
        if self._event(record):
            raise Stop from exc


def _first_batch(x, batch_size):
    import tensorflow as tf

    if isinstance(x, tf.data.Dataset):
        element = next(iter(x))
        return element[0] if isinstance(element, tuple) else element
    return tf.nest.map_structure(lambda a: a[: batch_size or 32], x)


@contextlib.contextmanager
def _patched(observer: _Observer, keras_eager: bool, keras_prebuild: bool = False, no_jit: bool = False):
    import tensorflow as tf

    tape_cls = tf.GradientTape
    original_gradient = tape_cls.gradient
    original_exit = tape_cls.__exit__
    original_watch = tape_cls.watch

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients=None):
        if unconnected_gradients is None:
            unconnected_gradients = tf.UnconnectedGradients.NONE
        return observer.gradient(
            original_gradient, self, target, sources, output_gradients, unconnected_gradients
        )

    def watch(self, tensor):
        watched = self.__dict__.setdefault("_truth_watched", [])
        watched.extend(tf.nest.flatten(tensor))
        return original_watch(self, tensor)

    def exit_(self, exc_type, exc, tb):
        try:
            observer.tape_exit(self, exc_type, exc, tb)
        finally:
            original_exit(self, exc_type, exc, tb)

    patches = [(tape_cls, "gradient", gradient), (tape_cls, "watch", watch), (tape_cls, "__exit__", exit_)]
    if no_jit:
        patches.append(no_jit_patch())
    if keras_eager or keras_prebuild:
        import keras

        def wrap(method):
            def run(self, x=None, *args, **kwargs):
                if keras_eager:
                    self.run_eagerly = True
                if keras_prebuild and not self.built and x is not None:
                    batch_size = kwargs.get("batch_size", args[1] if len(args) > 1 else None)
                    self(_first_batch(x, batch_size if method.__name__ == "fit" else None))
                return method(self, x, *args, **kwargs)

            return run

        for name in ("fit", "train_on_batch", "evaluate", "test_on_batch"):
            patches.append((keras.Model, name, wrap(getattr(keras.Model, name))))

    with patched(patches):
        yield


def program_truth(
    path: str,
    args: list[str] = (),
    step: int = 1,
    keras_eager: bool = False,
    keras_prebuild: bool = False,
    no_jit: bool = False,
) -> dict:
    """Run the program at `path` and return what TensorFlow said at its `step`-th gradient computation.

    Returns a dict with ``kind`` ("tape.gradient" | "exception" | "none": ran to the end without
    reaching that step | "program_error": raised outside any step | "exit": SystemExit first),
    ``sources`` (name, shape, dtype, status, maybe expr and error), ``error``, ``where``, ``mode``,
    ``step``, ``gradient_computations`` (how many ran), ``traces`` (every traced gradient call,
    with ``executed``) and ``warnings`` (Python warnings the program emitted, e.g. Keras'
    "Gradients do not exist").
    """
    path = os.path.abspath(path)
    observer = _Observer(path, step)
    saved_argv, saved_cwd, saved_path = sys.argv[:], os.getcwd(), sys.path[:]
    outcome: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        sys.argv = [path, *args]
        sys.path.insert(0, os.path.dirname(path))
        os.chdir(os.path.dirname(path))
        try:
            with _patched(observer, keras_eager, keras_prebuild, no_jit):
                runpy.run_path(path, run_name="__main__")
        except Stop:
            pass
        except SystemExit as exc:
            if observer.result is None:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                outcome = {"kind": "exit", "exit_code": code}
        except Exception as exc:  # noqa: BLE001 - the program may raise anything
            if observer.result is None:
                outcome = {
                    "kind": "program_error",
                    "error": error_text(exc),
                    "where": _where_tb(path, exc.__traceback__),
                }
        finally:
            sys.argv, sys.path[:] = saved_argv, saved_path
            os.chdir(saved_cwd)
    result = observer.result or {"kind": "none", "sources": [], "error": None, **outcome}
    result.setdefault("error", None)
    result["gradient_computations"] = observer.count
    result["traces"] = observer.traces
    result["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return result


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--step", type=int, default=1)
    parser.add_argument("--keras-eager", action="store_true", help="run Keras fit with run_eagerly=True")
    parser.add_argument(
        "--keras-prebuild", action="store_true", help="build an unbuilt model eagerly on the first batch"
    )
    parser.add_argument(
        "--no-jit",
        action="store_true",
        help="create every tf.function with jit_compile=False (observe XLA steps)",
    )
    parser.epilog = "Everything after `--` is passed to the program as its own arguments."
    argv = sys.argv[1:] if argv is None else list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    ns = parser.parse_args(argv[:split])
    program_args = argv[split + 1 :]
    # the program's own output goes to stderr, so stdout is only the JSON
    with contextlib.redirect_stdout(sys.stderr):
        result = program_truth(ns.path, program_args, ns.step, ns.keras_eager, ns.keras_prebuild, ns.no_jit)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
