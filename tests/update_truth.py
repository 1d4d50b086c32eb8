"""TensorFlow's own answer to "which variables does the N-th optimizer update change?".

An independent ground truth for variables that the loss reads but training
never updates, computed without tfviz: the program runs as
``python PATH ARGS...`` would (as ``__main__``, with ``sys.argv = [PATH,
*ARGS]``, in the script's folder) while Keras 3's
``BaseOptimizer.apply_gradients`` and ``BaseOptimizer.apply`` are patched. At
the N-th optimizer update *that actually executes* the value of every
trainable ``tf.Variable`` alive (found with ``gc.get_objects()``) is copied to
numpy just before the real update and again just after it, and the program is
stopped there. Each variable is reported with

``name``      its TensorFlow name (``dense/kernel:0``)
``path``      the Keras ``.path`` when it is the ``.value`` of a Keras variable, else None
``owner``     for a raw ``tf.Variable`` held by a Keras layer/model or ``tf.Module``:
              ``Class 'name'.attr`` or ``Class 'name'.attr[i]`` (else None)
``shape``
``passed``    whether the update was asked to change it
``changed``   whether its value differs after the update (bit for bit)
``max_abs_change``

plus ``passed`` (the variables handed to the optimizer, in order, each with
``gradient``: "tensor" or "none").

What counts as one update: one outer ``apply_gradients``/``apply`` call
(``apply_gradients`` calls ``apply`` internally, a ``LossScaleOptimizer``'s
``apply`` calls its inner optimizer's; each counts once), in the order the
updates really run:

* eagerly, the call itself;
* inside a ``tf.function`` (Keras ``fit``'s ``train_step`` included), each
  *execution* of the traced call: the patch adds a ``tf.numpy_function``
  before the update (control-dependent on every stateful op traced before it
  and on the previous observer in the same graph) and one after it
  (control-dependent on every op the update created). A trace that
  ``tf.function`` throws away is never executed and never counted. Keras
  ``compile`` is given ``jit_compile=False`` (XLA cannot run a
  numpy_function; on CPU Keras picks False anyway). With ``--no-jit`` every
  ``tf.function`` is created with ``jit_compile=False`` too, so a user's
  ``@tf.function(jit_compile=True)`` step can be observed (it then runs
  without XLA; which variables the update changes does not depend on XLA).

    python tests/update_truth.py resources/examples/untrained_raw_variable.py
    python tests/update_truth.py resources/examples/healthy_gan_generator.py --update 2
    python tests/update_truth.py PROG --update 3 -- --epochs 1

JSON goes to stdout; the program's own output goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import runpy
import sys
import traceback
from typing import Any

from truth_common import GraphStop, Stop, error_text, no_jit_patch, patched, shape_of  # run as a script


def _tf_variable(obj):
    """The tf.Variable behind a Keras 3 variable, or obj itself."""
    import tensorflow as tf

    if isinstance(obj, tf.Variable):
        return obj
    inner = getattr(obj, "_value", None)
    return inner if isinstance(inner, tf.Variable) else None


def _alive() -> tuple[list, dict[int, str]]:
    """Every initialized trainable eager tf.Variable alive, and {id(tf var): Keras path}."""
    import tensorflow as tf
    from keras.src.backend.common.variables import Variable as KerasVariable

    found, paths = [], {}
    for obj in gc.get_objects():
        try:
            if isinstance(obj, tf.Variable):
                found.append(obj)
            elif isinstance(obj, KerasVariable):
                inner = getattr(obj, "_value", None)
                if inner is not None:
                    paths[id(inner)] = obj.path
        except Exception:  # noqa: BLE001 - exotic objects in the heap
            continue
    variables = []
    for var in found:
        try:
            if var.trainable:
                var.numpy()  # uninitialized / graph-only variables raise
                variables.append(var)
        except Exception:  # noqa: BLE001
            continue
    return variables, paths


def _owner(var, own: set[int]) -> str | None:
    """`Class 'name'.attr` or `Class 'name'.attr[i]` for a variable a layer/module holds directly."""
    import keras
    import tensorflow as tf

    def holder_of(container) -> list:
        return [
            h
            for h in gc.get_referrers(container)
            if getattr(h, "__dict__", None) is container and isinstance(h, keras.Layer | tf.Module)
        ]

    def label(holder, attr, suffix):
        return f"{type(holder).__name__} {getattr(holder, 'name', '?')!r}.{attr}{suffix}"

    frontier = [(var, "")]
    for _ in range(2):
        nxt = []
        for obj, suffix in frontier:
            for ref in gc.get_referrers(obj):
                if id(ref) in own:
                    continue
                if isinstance(ref, dict):
                    for key, value in list(ref.items()):
                        if value is obj and isinstance(key, str):
                            for holder in holder_of(ref):
                                return label(holder, key, suffix)
                elif isinstance(ref, list):
                    index = next((i for i, item in enumerate(ref) if item is obj), None)
                    if index is not None:
                        nxt.append((ref, f"[{index}]{suffix}"))
        frontier = nxt
    return None


def _autograph_origin(frame) -> tuple[str, int] | None:
    """(file, line) of the user's source for a frame of autograph-generated code."""
    for fn in gc.get_referrers(frame.f_code):
        source_map = getattr(fn, "ag_source_map", None)
        if not source_map:
            continue
        for loc, origin in source_map.items():
            if loc.filename == frame.f_code.co_filename and loc.lineno == frame.f_lineno:
                return origin.loc.filename, origin.loc.lineno
    return None


def _where(script: str) -> str | None:
    """The innermost line of the script on the current stack (through autograph's source map)."""
    target = os.path.realpath(script)
    frame = sys._getframe(1)
    while frame is not None:
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
        if "__autograph_generated" in filename:
            filename, lineno = _autograph_origin(frame) or (filename, lineno)
        if os.path.realpath(filename) == target:
            return f"{os.path.basename(script)}:{lineno}"
        frame = frame.f_back
    return None


class _Observer:
    def __init__(self, script: str, update: int):
        self.script = script
        self.update = update
        self.count = 0  # executed outer updates
        self.depth = 0
        self.result: dict | None = None
        self._last = {}  # id(graph) -> last observer op in that graph

    # -- snapshots -------------------------------------------------------------------------------
    def _before(self, optimizer, call, passed, where, mode):
        self.count += 1
        if self.count != self.update or self.result is not None:
            return None
        variables, paths = _alive()
        values = [v.numpy().copy() for v in variables]
        return {
            "variables": variables,
            "values": values,
            "paths": paths,
            "optimizer": f"{type(optimizer).__name__} {getattr(optimizer, 'name', '')!r}",
            "call": call,
            "passed": passed,
            "where": where,
            "mode": mode,
        }

    def _after(self, snap):
        import numpy as np

        passed_ids = {id(_tf_variable(v)) for v, _ in snap["passed"]}
        own = {id(snap["variables"]), id(snap["values"]), id(snap["passed"])}
        rows = []
        for var, old in zip(snap["variables"], snap["values"]):
            new = var.numpy()
            same = old.shape == new.shape and np.array_equal(old, new, equal_nan=old.dtype.kind in "fc")
            try:
                delta = (
                    float(np.max(np.abs(new.astype("float64") - old.astype("float64")))) if old.size else 0.0
                )
            except (TypeError, ValueError):
                delta = None
            path = snap["paths"].get(id(var))
            rows.append(
                {
                    "name": var.name,
                    "path": path,
                    "owner": None if path else _owner(var, own),
                    "shape": shape_of(var),
                    "passed": id(var) in passed_ids,
                    "changed": not same,
                    "max_abs_change": delta,
                }
            )
        rows.sort(key=lambda r: r["path"] or r["owner"] or r["name"])
        passed = []
        for obj, grad in snap["passed"]:
            var = _tf_variable(obj)
            passed.append(
                {
                    "name": getattr(var, "name", None),
                    "path": snap["paths"].get(id(var)) or getattr(obj, "path", None),
                    "shape": shape_of(obj),
                    "gradient": "none" if grad is None else "tensor",
                }
            )
        self.result = {
            "status": "observed",
            "update": self.update,
            "mode": snap["mode"],
            "optimizer": snap["optimizer"],
            "call": snap["call"],
            "where": snap["where"],
            "passed": passed,
            "variables": rows,
            "unchanged": [r["path"] or r["owner"] or r["name"] for r in rows if not r["changed"]],
            "changed": [r["path"] or r["owner"] or r["name"] for r in rows if r["changed"]],
        }

    # -- the patched call --------------------------------------------------------------------------
    def call(self, original, call, optimizer, args, kwargs):
        if self.depth > 0 or self.result is not None:
            return original(optimizer, *args, **kwargs)
        import tensorflow as tf

        args = list(args)
        if call == "apply_gradients":
            if args:
                args[0] = pairs = [tuple(p) for p in args[0]]
            else:
                kwargs["grads_and_vars"] = pairs = [tuple(p) for p in kwargs["grads_and_vars"]]
            passed = [(v, g) for g, v in pairs]
        else:
            grads = args[0] if args else kwargs.get("grads")
            variables = args[1] if len(args) > 1 else kwargs.get("trainable_variables")
            grads = list(grads)
            if args:
                args[0] = grads
            else:
                kwargs["grads"] = grads
            if variables is None:
                variables = list(getattr(optimizer, "_trainable_variables", []) or [])
            passed = list(zip(list(variables), grads))
        where = _where(self.script)

        self.depth += 1
        try:
            if tf.executing_eagerly():
                snap = self._before(optimizer, call, passed, where, "eager")
                result = original(optimizer, *args, **kwargs)
                if snap is not None:
                    self._after(snap)
                    raise Stop
                return result
            return self._graph_call(tf, original, optimizer, args, kwargs, call, passed, where)
        finally:
            self.depth -= 1

    def _graph_call(self, tf, original, optimizer, args, kwargs, call, passed, where):
        graph = tf.compat.v1.get_default_graph()
        state: dict[str, Any] = {}

        def before():
            state["snap"] = self._before(optimizer, call, passed, where, "graph")
            return True

        def after():
            snap = state.pop("snap", None)
            if snap is not None:
                self._after(snap)
                raise GraphStop("update_truth: update observed")
            return True

        existing = graph.get_operations()
        deps = [op for op in existing if op._is_stateful]
        if id(graph) in self._last:
            deps.append(self._last[id(graph)])
        with tf.control_dependencies(deps):
            before_op = tf.numpy_function(before, [], tf.bool, stateful=True, name="update_truth_before")
        seen = {id(op) for op in graph.get_operations()}
        with tf.control_dependencies([before_op]):
            result = original(optimizer, *args, **kwargs)
        created = [op for op in graph.get_operations() if id(op) not in seen]
        with tf.control_dependencies(created + [before_op]):
            after_op = tf.numpy_function(after, [], tf.bool, stateful=True, name="update_truth_after")
        self._last[id(graph)] = after_op
        return result


@contextlib.contextmanager
def _patched(observer: _Observer, no_jit: bool = False):
    import keras
    from keras.src.optimizers.base_optimizer import BaseOptimizer

    def wrap(name):
        original = BaseOptimizer.__dict__[name]

        def patched(self, *args, **kwargs):
            return observer.call(original, name, self, args, kwargs)

        return patched

    original_compile = keras.Model.compile

    def compile_(self, *args, **kwargs):
        kwargs["jit_compile"] = False
        return original_compile(self, *args, **kwargs)

    patches = [
        (BaseOptimizer, "apply_gradients", wrap("apply_gradients")),
        (BaseOptimizer, "apply", wrap("apply")),
        (keras.Model, "compile", compile_),
    ]
    if no_jit:
        patches.append(no_jit_patch())
    with patched(patches):
        yield


def update_truth(path: str, args: list[str] = (), update: int = 1, no_jit: bool = False) -> dict:
    """Run the program at `path` and report what its `update`-th optimizer update changed.

    ``status``: "observed" | "not_reached" (ran to the end first; ``updates_seen`` says how many
    ran) | "program_error" (raised before it) | "exit" (SystemExit first).
    """
    path = os.path.abspath(path)
    observer = _Observer(path, update)
    saved_argv, saved_cwd, saved_path = sys.argv[:], os.getcwd(), sys.path[:]
    outcome: dict[str, Any] = {}
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(path))
    os.chdir(os.path.dirname(path))
    try:
        with contextlib.redirect_stdout(sys.stderr):
            import tensorflow  # noqa: F401 - before the patch: keras must be importable

            with _patched(observer, no_jit):
                try:
                    runpy.run_path(path, run_name="__main__")
                except Stop:
                    pass
                except SystemExit as exc:
                    if observer.result is None:
                        outcome = {"status": "exit", "error": f"SystemExit: {exc.code}"}
                except Exception as exc:  # noqa: BLE001 - the program's own error
                    if observer.result is None:
                        outcome = {"status": "program_error", "error": error_text(exc)}
                        traceback.print_exc(file=sys.stderr)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)
    result = observer.result or {"status": "not_reached", **outcome}
    if outcome and observer.result is None:
        result.update(outcome)
    return {"program": path, "args": list(args), "update": update, "updates_seen": observer.count, **result}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program")
    parser.add_argument("--update", type=int, default=1, help="which optimizer update (1-based)")
    parser.add_argument("--indent", type=int, default=1)
    parser.add_argument(
        "--no-jit",
        action="store_true",
        help="create every tf.function with jit_compile=False (observe XLA steps)",
    )
    options = parser.parse_args(argv)
    result = update_truth(options.program, extra, options.update, options.no_jit)
    json.dump(result, sys.stdout, indent=options.indent or None)
    sys.stdout.write("\n")
    return 0 if result["status"] == "observed" else 1


if __name__ == "__main__":
    sys.exit(main())
