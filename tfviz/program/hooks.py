"""Patches through which tfviz sees a running program's gradient computations.

While a program runs, or while tfviz replays one of its steps, TensorFlow's
and Keras' entry points for gradients call a *handler* first. With no
handler installed every patched call behaves exactly as the original, so the
patches can stay in place for the whole analysis.

The handler decides: let the call through, stop the program (a
``BaseException``, so the user's ``except Exception`` cannot swallow it), or
hand a different result back.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import traceback
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from tfviz.program.calls import AUTOGRAPH_API, Predicted
from tfviz.program.frames import frame_source
from tfviz.report import Source


@dataclass
class Hit:
    """One gradient computation as the program asked for it."""

    api: str  # "tape.gradient", "tape.jacobian", "tf.gradients", "exception"
    tape: Any
    target: Any
    sources: Any
    output_gradients: Any = None
    error: BaseException | None = None


class Handler(Protocol):
    def tape_entered(self, tape: Any, frame: Any) -> bool:
        """Return False to keep the tape from recording (an inert tape)."""

    def tape_exited(self, tape: Any, error: BaseException | None) -> None: ...

    def tape_watched(self, tape: Any, tensors: Any) -> None: ...

    def gradient(self, hit: Hit, original: Callable[[], Any]) -> Any: ...

    def function_called(
        self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], frame: Any, original: Callable[[], Any]
    ) -> Any: ...

    def keras_fit(
        self, model: Any, bound: dict[str, Any], frame: Any, original: Callable[[], Any]
    ) -> Any: ...

    def keras_train_on_batch(
        self, model: Any, bound: dict[str, Any], frame: Any, original: Callable[[], Any]
    ) -> Any: ...

    def graph_mode(self) -> None: ...

    def strategy_run(
        self,
        strategy: Any,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        original: Callable[[], Any],
    ) -> Any: ...

    def optimizer_apply(
        self, optimizer: Any, grads: list[Any], variables: list[Any], original: Callable[[], Any]
    ) -> Any: ...

    def all_reduce(self, context: Any, reduce_op: Any, value: Any, original: Callable[[Any], Any]) -> Any:
        """A replica's all-reduce (``ReplicaContext.all_reduce``); ``original(value)`` runs it."""

    def variable_assigned(self, variable: Any) -> None: ...

    def trainable_listed(self, layer: Any, variables: list[Any], frame: Any) -> None: ...

    def loss_scaled(self, optimizer: Any) -> None: ...


_handler: Handler | None = None
_installed: list[tuple[Any, str, Any, bool]] = []
#: this thread's recording tapes, outermost first (tapes are per thread in TensorFlow too):
#: a replayed step's ``tape.watch`` is repeated on the engine's
_threads = threading.local()


#: while an analysis listens: each predict() called as a tape records
_predictions: list[Predicted] | None = None


@contextlib.contextmanager
def predictions() -> Iterator[list[Predicted]]:
    """Collect each ``predict()`` called while a tape records: it hands back NumPy, so a loss
    computed from it has no gradient, however the tape is used."""
    global _predictions
    old, _predictions = _predictions, []
    try:
        yield _predictions
    finally:
        _predictions = old


def _open() -> list[Any]:
    if not hasattr(_threads, "tapes"):
        _threads.tapes = []
    tapes: list[Any] = _threads.tapes
    return tapes


@contextlib.contextmanager
def _computing() -> Iterator[None]:
    """Mark this thread as inside a gradient computation.

    A gradient call made while another one runs (``tf.recompute_grad`` re-runs
    its block under a tape of its own during the outer backward pass, and so
    does a ``custom_gradient`` whose grad_fn uses a tape) is part of that outer
    computation, not a step of the program: it runs unseen.
    """
    _threads.depth = getattr(_threads, "depth", 0) + 1
    try:
        yield
    finally:
        _threads.depth -= 1


def _nested() -> bool:
    return getattr(_threads, "depth", 0) > 0


def open_tapes() -> list[Any]:
    return [t for t in _open() if getattr(t, "_recording", False)]


def current() -> Handler | None:
    return _handler


@contextlib.contextmanager
def handling(handler: Handler | None) -> Iterator[None]:
    """Route patched calls to ``handler`` for the duration (None: pass through)."""
    global _handler
    old = _handler
    _handler = handler
    try:
        yield
    finally:
        _handler = old


def _patch(owner: Any, name: str, make: Callable[[Any], Any]) -> None:
    """Replace ``owner.name`` with ``make(original)``, run as written inside tf.function:
    AutoGraph would otherwise convert the patch (it is not TensorFlow's own code)."""
    from tensorflow.python.autograph.impl.api import do_not_convert

    had = name in vars(owner) if isinstance(owner, type) else True
    original = getattr(owner, name, None)
    setattr(owner, name, do_not_convert(make(original)))
    _installed.append((owner, name, original, had))


def _patch_property(owner: type, name: str, make: Callable[[Any], Any]) -> None:
    """Replace the getter of the property ``owner.name`` with ``make(getter)``."""
    from tensorflow.python.autograph.impl.api import do_not_convert

    original = vars(owner)[name]
    setattr(
        owner,
        name,
        property(do_not_convert(make(original.fget)), original.fset, original.fdel, original.__doc__),
    )
    _installed.append((owner, name, original, True))


_all_installed = False


def install() -> None:
    """Install the patches once per process (idempotent; Keras' ``predict`` may have been
    patched alone before, for a ``loss()`` target)."""
    global _all_installed
    if _all_installed:
        return
    _all_installed = True
    import tensorflow as tf
    from tensorflow.python.eager import backprop
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

    tape_cls = backprop.GradientTape
    _patch(tape_cls, "__enter__", _enter)
    _patch(tape_cls, "__exit__", _exit)
    _patch(tape_cls, "watch", _watch)
    _patch(tape_cls, "gradient", lambda orig: _tape_call(orig, "tape.gradient"))
    _patch(tape_cls, "jacobian", lambda orig: _tape_call(orig, "tape.jacobian"))
    _patch(tape_cls, "batch_jacobian", lambda orig: _tape_call(orig, "tape.jacobian"))
    _patch(pf.Function, "__call__", _function_call)
    _patch(tf, "gradients", _tf_gradients)
    _patch(tf.compat.v1, "gradients", _tf_gradients)
    _patch(tf.compat.v1, "disable_eager_execution", _graph_mode)
    _patch(tf.compat.v1, "disable_v2_behavior", _graph_mode)
    _patch(tf.compat.v1.train.Optimizer, "apply_gradients", _apply_gradients)
    from tensorflow.python.distribute import distribute_lib

    _patch(distribute_lib.StrategyBase, "run", _strategy_run)
    _patch(distribute_lib.ReplicaContext, "all_reduce", _all_reduce)
    from tensorflow.python.autograph.impl import api as ag_api

    autograph_ops = ag_api._TRANSPILER.get_extra_locals()["ag__"]  # what converted code calls
    _patch(autograph_ops, "for_stmt", lambda orig: _loop(orig, "for_stmt"))
    _patch(autograph_ops, "while_stmt", lambda orig: _loop(orig, "while_stmt"))
    from tfviz.program import readouts

    for owner, name, make in readouts.patches():
        _patch(owner, name, make)
    try:
        import keras
    except ImportError:  # pragma: no cover - Keras ships with TensorFlow
        return
    from keras.src.optimizers.base_optimizer import BaseOptimizer
    from tensorflow.python.ops import resource_variable_ops

    _patch(BaseOptimizer, "apply_gradients", _apply_gradients)
    _patch(BaseOptimizer, "apply", _apply)
    from keras.src.optimizers.loss_scale_optimizer import LossScaleOptimizer

    _patch(LossScaleOptimizer, "scale_loss", _telling("loss_scaled"))
    for cls in (resource_variable_ops.ResourceVariable, resource_variable_ops.BaseResourceVariable):
        for name in ("assign", "assign_add", "assign_sub"):
            if name in vars(cls):
                _patch(cls, name, _telling("variable_assigned"))
    from keras.src.layers.layer import Layer

    for name in ("trainable_variables", "trainable_weights"):
        _patch_property(Layer, name, _listing)
    install_predict()
    _patch(keras.Model, "fit", lambda orig: _keras(orig, "keras_fit"))
    _patch(keras.Model, "train_on_batch", lambda orig: _keras(orig, "keras_train_on_batch"))
    _patch(keras.Model, "compile", _compile)


#: where each model was last compiled, at the program's own line (the model itself is not
#: touched: the program sees no attribute of tfviz's)
compiled_at: weakref.WeakKeyDictionary[Any, Source] = weakref.WeakKeyDictionary()


def _compile(orig: Callable[..., Any]) -> Callable[..., Any]:
    def compile(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _handler is not None:
            from tfviz.script.sourcemap import user_source

            with contextlib.suppress(TypeError):  # a model that cannot be a weak key: not noted
                where = user_source(traceback.extract_stack(sys._getframe(1)))
                if where is not None:
                    compiled_at[self] = where
        return orig(self, *args, **kwargs)

    compile.__name__ = orig.__name__
    compile.__doc__ = orig.__doc__
    return compile


def _caller(depth: int = 2) -> Any:
    """The frame that called the patched function (past the do_not_convert wrapper, and past
    tfviz's own wrappers of the same function: the copy of an eager call wraps predict())."""
    from tfviz.script.sourcemap import is_user_file

    frame = sys._getframe(depth)
    while frame.f_back is not None and (
        frame.f_code.co_filename.endswith(AUTOGRAPH_API)
        or (frame.f_code.co_filename.startswith(_OWN) and not is_user_file(frame.f_code.co_filename))
    ):
        frame = frame.f_back
    return frame


#: tfviz's own package: a frame there is a wrapper of tfviz's (the bundled examples are the user's)
_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


_predict_installed = False


def install_predict() -> None:
    """Patch Keras' ``predict`` alone (a ``loss()`` target needs no other hook); idempotent."""
    global _predict_installed
    if _predict_installed:
        return
    _predict_installed = True
    try:
        import keras
    except ImportError:  # pragma: no cover - Keras ships with TensorFlow
        return
    _patch(keras.Model, "predict", _predict)
    _patch(keras.Model, "predict_on_batch", _predict)


def mark() -> tuple[int, bool, bool]:
    """Where the patches stand now, for :func:`uninstall` to come back to."""
    return len(_installed), _all_installed, _predict_installed


def uninstall(to: tuple[int, bool, bool] = (0, False, False)) -> None:
    """Put back what :func:`install` and :func:`install_predict` replaced since :func:`mark`
    said ``to`` (everything, by default), newest first: an analysis in the caller's own
    process (:func:`tfviz.check` on a function) leaves TensorFlow and Keras as it found them.
    A worker never needs this; its process ends."""
    global _all_installed, _predict_installed
    while len(_installed) > to[0]:
        owner, name, original, had = _installed.pop()
        if had:
            setattr(owner, name, original)
        else:
            delattr(owner, name)  # it was inherited: the class's own entry goes
    _all_installed, _predict_installed = to[1], to[2]


def _recording() -> bool:
    """A tape records on this thread: the program's (tracked as it opens) or the engine's."""
    from tensorflow.python.eager import record

    return bool(open_tapes()) or bool(record.could_possibly_record())


def _predict(orig: Callable[..., Any]) -> Callable[..., Any]:
    def predict(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _predictions is not None and _recording():
            frame = _caller()
            name = next(
                (
                    n
                    for scope in (frame.f_locals, frame.f_globals)
                    for n, value in scope.items()
                    if value is self
                ),
                getattr(self, "name", "model"),
            )
            _predictions.append(Predicted(self, name, frame_source(frame)))
        return orig(self, *args, **kwargs)

    return predict


def _enter(orig: Callable[..., Any]) -> Callable[..., Any]:
    def __enter__(self: Any) -> Any:
        h = _handler
        if h is not None and not h.tape_entered(self, _caller()):
            self._tfviz_inert = True
            return self
        self._tfviz_inert = False
        entered = orig(self)
        _open().append(self)
        return entered

    return __enter__


def _exit(orig: Callable[..., Any]) -> Callable[..., Any]:
    def __exit__(self: Any, typ: Any, value: Any, tb: Any) -> None:
        inert = getattr(self, "_tfviz_inert", False)
        if not inert:
            tapes = _open()
            if tapes and tapes[-1] is self:
                tapes.pop()
            elif self in tapes:
                tapes.remove(self)
            orig(self, typ, value, tb)
        h = _handler
        if h is not None:
            h.tape_exited(self, value)

    return __exit__


def _watch(orig: Callable[..., Any]) -> Callable[..., Any]:
    def watch(self: Any, tensor: Any) -> Any:
        h = _handler
        if h is not None:
            h.tape_watched(self, tensor)
        if getattr(self, "_tfviz_inert", False):
            return None
        return orig(self, tensor)

    return watch


def _tape_call(orig: Callable[..., Any], api: str) -> Callable[..., Any]:
    def call(self: Any, target: Any, sources: Any, *args: Any, **kwargs: Any) -> Any:
        h = _handler
        if h is None or _nested():
            return orig(self, target, sources, *args, **kwargs)
        og = kwargs.get("output_gradients", args[0] if args and api == "tape.gradient" else None)
        hit = Hit(api=api, tape=self, target=target, sources=sources, output_gradients=og)

        def run() -> Any:
            with _computing():
                return orig(self, target, sources, *args, **kwargs)

        return h.gradient(hit, run)

    call.__name__ = orig.__name__
    call.__doc__ = orig.__doc__
    return call


def _function_call(orig: Callable[..., Any]) -> Callable[..., Any]:
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        h = _handler
        if h is None:
            return orig(self, *args, **kwargs)
        return h.function_called(self, args, kwargs, _caller(), lambda: orig(self, *args, **kwargs))

    return __call__


def _loop(orig: Callable[..., Any], kind: str) -> Callable[..., Any]:
    def loop(*args: Any, **kwargs: Any) -> Any:
        h = _handler
        if h is None or not getattr(h, "unroll_loops", False):
            return orig(*args, **kwargs)
        from tfviz.program import loops

        return getattr(loops, kind)(orig, h, *args, **kwargs)

    return loop


def _tf_gradients(orig: Callable[..., Any]) -> Callable[..., Any]:
    def gradients(ys: Any, xs: Any, grad_ys: Any = None, *args: Any, **kwargs: Any) -> Any:
        h = _handler
        if h is None or _nested():
            return orig(ys, xs, grad_ys, *args, **kwargs)
        hit = Hit(api="tf.gradients", tape=None, target=ys, sources=xs, output_gradients=grad_ys)

        def run() -> Any:
            with _computing():
                return orig(ys, xs, grad_ys, *args, **kwargs)

        return h.gradient(hit, run)

    gradients.__doc__ = orig.__doc__
    return gradients


def _graph_mode(orig: Callable[..., Any]) -> Callable[..., Any]:
    def disable(*args: Any, **kwargs: Any) -> Any:
        h = _handler
        if h is not None:
            h.graph_mode()
        return orig(*args, **kwargs)

    return disable


def _all_reduce(orig: Callable[..., Any]) -> Callable[..., Any]:
    def all_reduce(self: Any, reduce_op: Any, value: Any, options: Any = None) -> Any:
        h = _handler
        if h is None:
            return orig(self, reduce_op, value, options)
        return h.all_reduce(self, reduce_op, value, lambda v: orig(self, reduce_op, v, options))

    all_reduce.__doc__ = orig.__doc__
    return all_reduce


def _strategy_run(orig: Callable[..., Any]) -> Callable[..., Any]:
    def run(self: Any, fn: Any, args: Any = (), kwargs: Any = None, options: Any = None) -> Any:
        h = _handler
        if h is None:
            return orig(self, fn, args, kwargs, options)
        return h.strategy_run(self, fn, args, kwargs or {}, lambda: orig(self, fn, args, kwargs, options))

    run.__doc__ = orig.__doc__
    return run


def _apply_gradients(orig: Callable[..., Any]) -> Callable[..., Any]:
    def apply_gradients(self: Any, grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
        h = _handler
        if h is None:
            return orig(self, grads_and_vars, *args, **kwargs)
        pairs = list(grads_and_vars)
        return h.optimizer_apply(
            self, [g for g, _ in pairs], [v for _, v in pairs], lambda: orig(self, pairs, *args, **kwargs)
        )

    apply_gradients.__doc__ = orig.__doc__
    return apply_gradients


def _apply(orig: Callable[..., Any]) -> Callable[..., Any]:
    def apply(self: Any, grads: Any, trainable_variables: Any = None, *args: Any, **kwargs: Any) -> Any:
        h = _handler
        if h is None:
            return orig(self, grads, trainable_variables, *args, **kwargs)
        grads = list(grads)
        variables = list(trainable_variables) if trainable_variables is not None else None
        return h.optimizer_apply(
            self, grads, variables or [], lambda: orig(self, grads, variables, *args, **kwargs)
        )

    apply.__doc__ = orig.__doc__
    return apply


def _telling(method: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A patch that tells the handler's ``method`` of the object before the call runs as it
    would (an assignment to a variable, a loss scaled by a LossScaleOptimizer)."""

    def patch(orig: Callable[..., Any]) -> Callable[..., Any]:
        def told(self: Any, *args: Any, **kwargs: Any) -> Any:
            h = _handler
            if h is not None:
                getattr(h, method)(self)
            return orig(self, *args, **kwargs)

        told.__name__ = orig.__name__
        told.__doc__ = orig.__doc__
        return told

    return patch


def _listing(fget: Callable[..., Any]) -> Callable[..., Any]:
    def listed(self: Any) -> Any:
        variables = fget(self)
        h = _handler
        if h is not None:
            h.trainable_listed(self, variables, _caller())
        return variables

    listed.__doc__ = fget.__doc__
    return listed


def _keras(orig: Callable[..., Any], method: str) -> Callable[..., Any]:
    import inspect

    signature = inspect.signature(orig)

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        h = _handler
        if h is None:
            return orig(self, *args, **kwargs)
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        params = dict(bound.arguments)
        params.update(params.pop("kwargs", {}) or {})
        return getattr(h, method)(self, params, _caller(), lambda: orig(self, *args, **kwargs))

    call.__name__ = orig.__name__
    call.__doc__ = orig.__doc__
    return call
