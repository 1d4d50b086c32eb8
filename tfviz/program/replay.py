"""Run a captured training step again, up to its gradient call, as a target.

The engine diagnoses a zero-argument callable that returns the loss. A step
captured from a running program becomes one: the step's own code runs again
(a ``tf.function``'s Python body with the same arguments, Keras'
``train_step`` on the same batch, or the user's ``with tf.GradientTape()``
block re-executed from its source), and when it reaches its gradient call,
the call's target is handed back as the loss instead of being
differentiated. Nothing after that call runs, so no optimizer ever applies
a gradient.
"""

from __future__ import annotations

import ast
import functools
import types
from collections.abc import Callable, Iterator
from typing import Any, cast

from tfviz.errors import AnalysisError
from tfviz.program import hooks
from tfviz.program.frames import chosen_replica
from tfviz.program.readouts import Readouts, reading
from tfviz.report import Source


class Captured(BaseException):
    """The replayed step reached its gradient call (unwinds the user's code)."""

    def __init__(self, hit: hooks.Hit) -> None:
        super().__init__("gradient call reached")
        self.hit = hit


class _Returned(BaseException):
    def __init__(self, value: Any) -> None:
        super().__init__("return")
        self.value = value


class ReplayHandler:
    """Lets the step run as written until its ``k``-th gradient call.

    ``inert``: the captured step raised while a tape recorded (a gradient
    function failed in the forward call). Its tapes must then not record, or
    the replay raises the same way; the engine's own tape watches instead.
    """

    #: a loop that holds the step's gradient call is unrolled (see :mod:`tfviz.program.loops`)
    unroll_loops = True

    def __init__(
        self, k: int, inert: bool, inline: list[Any] | tuple[Any, ...] = (), tape_ordinal: int | None = None
    ) -> None:
        self.k, self.inert, self.count = k, inert, 0
        #: nested tf.functions that held the step's gradient calls (see :func:`run_python`)
        self.inline = list(inline)
        #: the engine's tapes around the replay: what the step watches, they watch too,
        #: so a tensor source the step makes (a :class:`LiveSource`) is followed
        self.outer = hooks.open_tapes()
        #: which of the step's tapes made the gradient call (0: the first it opens). The
        #: engine's tapes record only while that one does: what the program computes
        #: before its tape opens (a generator run before the critic's tape, an encoder
        #: called outside it) gets no gradient from TensorFlow, and none here.
        self.window = tape_ordinal if not inert and self.outer else None
        self.entered = 0
        self.following: Any = None
        self.paused = False
        #: the replay reached its gradient call without meeting that tape
        self.missed = False
        #: (id of graph, op name) of the ops a trace made while the tape did not record
        self.outside: set[tuple[int, str]] = set()
        #: ids of the variable handles an eager run read while the tape did not record
        self.read_outside: set[int] = set()
        if self.window is not None:
            self._pause()

    def _pause(self) -> None:
        from tensorflow.python.framework import op_callbacks

        for t in self.outer:
            t._pop_tape()
        self.paused = True
        op_callbacks.add_op_callback(self._unrecorded)

    def _resume(self) -> None:
        from tensorflow.python.framework import op_callbacks

        op_callbacks.remove_op_callback(self._unrecorded)
        for t in self.outer:
            t._push_tape()
        self.paused = False

    def _unrecorded(
        self,
        op_type: str | bytes,
        inputs: Any,
        attrs: Any,
        outputs: Any,
        op_name: str | bytes | None = None,
        graph: Any = None,
    ) -> None:
        if graph is not None and op_name:
            self.outside.add((id(graph), op_name.decode() if isinstance(op_name, bytes) else op_name))
        elif graph is None and op_type in ("ReadVariableOp", b"ReadVariableOp") and inputs:
            self.read_outside.add(id(inputs[0]))
        return None

    def finish(self) -> None:
        """Leave the engine's tapes recording, as they were."""
        if self.paused:
            self._resume()
        self.window, self.following = None, None  # and recording they stay

    def tape_entered(self, tape: Any, frame: Any) -> bool:
        if self.window is not None and self.entered == self.window and self.paused:
            self._resume()
            self.following = tape
        self.entered += 1
        return not self.inert

    def tape_exited(self, tape: Any, error: BaseException | None) -> None:
        if tape is self.following and not self.paused:
            self._pause()

    def tape_watched(self, tape: Any, tensors: Any) -> None:
        for outer in self.outer:
            if outer is not tape:
                outer.watch(tensors)

    def gradient(self, hit: hooks.Hit, original: Callable[[], Any]) -> Any:
        self.count += 1
        if self.inert or self.count >= self.k:
            self.missed = self.window is not None and self.following is None
            raise Captured(hit)
        return original()

    def function_called(
        self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], frame: Any, original: Callable[[], Any]
    ) -> Any:
        if any(fn is f for f in self.inline):
            return run_python(fn, args, kwargs)
        return original()

    def keras_fit(self, model: Any, bound: dict[str, Any], frame: Any, original: Callable[[], Any]) -> Any:
        return original()

    def keras_train_on_batch(
        self, model: Any, bound: dict[str, Any], frame: Any, original: Callable[[], Any]
    ) -> Any:
        return original()

    def graph_mode(self) -> None:
        return None

    def optimizer_apply(
        self, optimizer: Any, grads: list[Any], variables: list[Any], original: Callable[[], Any]
    ) -> None:
        return None  # a replayed step never updates anything (an earlier step's optimizer call)

    def variable_assigned(self, variable: Any) -> None:
        return None

    def trainable_listed(self, layer: Any, variables: list[Any], frame: Any) -> None:
        return None

    def loss_scaled(self, optimizer: Any) -> None:
        return None

    def all_reduce(self, context: Any, reduce_op: Any, value: Any, original: Callable[[Any], Any]) -> Any:
        return original(value)

    def strategy_run(
        self,
        strategy: Any,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        original: Callable[[], Any],
    ) -> Any:
        """One replica (the one captured), in this thread: TensorFlow's tapes are per thread, and
        the engine's tape must see the replica's ops."""
        import tensorflow as tf

        chosen = chosen_replica()

        def first(value: Any) -> Any:
            try:
                return strategy.experimental_local_results(value)[chosen]
            except Exception:  # noqa: BLE001 - not a distributed value
                return value

        return fn(*tf.nest.map_structure(first, tuple(args)), **tf.nest.map_structure(first, dict(kwargs)))


def float_tensors(value: Any) -> list[Any]:
    import tensorflow as tf

    out = []
    for t in tf.nest.flatten(value, expand_composites=True):
        if tf.is_tensor(t) and (t.dtype.is_floating or t.dtype.is_complex):
            out.append(t)
    return out


def to_loss(target: Any, output_gradients: Any = None) -> Any:
    """One float tensor whose gradient equals what ``tape.gradient(target, ...)``
    computes: TensorFlow sums over the targets' elements (weighted by
    ``output_gradients`` when given)."""
    import tensorflow as tf

    tensors = float_tensors(target)
    if not tensors:
        return target
    weights = float_tensors(output_gradients) if output_gradients is not None else []
    if not weights and len(tensors) == 1 and tensors[0].shape.rank == 0:
        return tensors[0]
    parts = []
    for i, t in enumerate(tensors):
        if t.dtype.is_complex:
            t = tf.math.real(t)
        if i < len(weights):
            t = t * tf.cast(weights[i], t.dtype)
        parts.append(tf.reduce_sum(t))
    dtypes = {p.dtype for p in parts}
    if len(dtypes) > 1:
        parts = [tf.cast(p, tf.float64) for p in parts]
    return parts[0] if len(parts) == 1 else tf.add_n(parts)


def _convert(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as tf.function would run it (AutoGraph), methods included."""
    from tensorflow.python.autograph.core import ag_ctx
    from tensorflow.python.autograph.impl import api as ag_api

    fn = _method_body(fn)
    if not isinstance(fn, (types.FunctionType, types.MethodType, functools.partial)):
        return fn
    converted: Callable[..., Any] = ag_api.tf_convert(
        fn, ag_ctx.ControlStatusCtx(status=ag_ctx.Status.ENABLED)
    )
    return converted


def _method_body(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A tf.function method's own body, bound to its object.

    TensorFlow binds a decorated method through a wrapper of its own
    (``bound_method_wrapper``), which AutoGraph leaves unconverted (it is
    TensorFlow's code): a ``for n in tf.range(steps)`` in the method would then
    iterate a symbolic tensor. The wrapper holds the object and the Function.
    """
    code = getattr(fn, "__code__", None)
    if code is None or code.co_name != "bound_method_wrapper" or not fn.__closure__:
        return fn
    cells = dict(zip(code.co_freevars, fn.__closure__))
    try:
        obj = cells["weak_instance"].cell_contents()
        body = cells["original_function"].cell_contents.python_function
    except (KeyError, AttributeError, ValueError):
        return fn
    return functools.partial(body, obj) if obj is not None else fn


def run_python(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run a ``tf.function``'s Python body in place of the Function, as its trace would.

    A tf.function nested in the step keeps the graph it traced the first
    time, so calling it again runs no Python and its gradient call is never
    seen. Inlined, its body runs (AutoGraph-converted where the Function
    converts it) in the caller's context: eagerly in a replay, or in the
    caller's new trace.
    """
    body = fn.python_function
    return (_convert(body) if getattr(fn, "_autograph", True) else body)(*args, **kwargs)


class _Replay:
    """What both replays keep of their last run, and how they end it at the gradient call."""

    def __init__(self, k: int, inert: bool, tape_ordinal: int | None) -> None:
        self.k, self.inert, self.tape_ordinal = k, inert, tape_ordinal
        #: the sources the last run passed to its gradient call (see :func:`resolve`)
        self.live: list[Any] = []
        #: ops the last traced run made while its tape did not record (see ReplayHandler.outside)
        self.outside_tape: set[tuple[int, str]] = set()
        #: variable handles the last eager run read while its tape did not record
        self.read_outside: set[int] = set()
        self.readouts = Readouts()

    @property
    def read_outs(self) -> dict[tuple[int, str], tuple[str, Source | None]]:
        """What the step's code read out into Python in the last trace of it, by traced op
        (:attr:`Readouts.read_outs`)."""
        return self.readouts.read_outs

    def __call__(self) -> Any:
        try:
            return self._run()
        except _RunAgain:
            return self._run()

    def _run(self) -> Any:  # pragma: no cover - defined by each replay
        raise NotImplementedError

    def _reached(self, handler: ReplayHandler, c: Captured) -> Any:
        """The loss at the gradient call, with what this run made of its sources kept."""
        if handler.missed:
            # The step opened its tapes otherwise than when it was captured: run it again
            # with the engine's tapes recording throughout, once this run's handler is gone.
            self.tape_ordinal = None
            raise _RunAgain
        self.live = _flat_sources(c.hit)
        self.outside_tape, self.read_outside = handler.outside, handler.read_outside
        handler.finish()  # the loss below is the engine's own op: its tapes record it
        return to_loss(c.hit.target, c.hit.output_gradients)


class _RunAgain(BaseException):
    pass


class CallReplay(_Replay):
    """Calls ``fn(*args, **kwargs)`` again: a tf.function's body, or ``train_step``.

    ``inline``: the tf.functions nested in the step that held its gradient
    calls, run as Python (:func:`run_python`) so the replay sees those calls.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        k: int,
        inert: bool,
        autograph: bool = True,
        inline: list[Any] | tuple[Any, ...] = (),
        tape_ordinal: int | None = None,
    ) -> None:
        super().__init__(k, inert, tape_ordinal)
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.autograph = autograph
        self.inline = list(inline)

    def _run(self) -> Any:
        fn = _convert(self.fn) if self.autograph else self.fn
        handler = ReplayHandler(self.k, self.inert, self.inline, self.tape_ordinal)
        with hooks.handling(handler), reading(self.readouts):
            try:
                result = fn(*self.args, **self.kwargs)
            except Captured as c:
                return self._reached(handler, c)
            finally:
                handler.finish()
        if self.inert and float_tensors(result):
            return to_loss(result)
        raise AnalysisError("replaying the step did not reach its gradient computation again")


class BlockReplay(_Replay):
    """Re-executes the user's ``with tf.GradientTape()`` block from its source.

    ``code`` holds the ``with`` statement and the statements after it up to
    the gradient call, compiled with the user's file name and line numbers,
    so ops and errors point at the user's own lines. It runs in a copy of
    the variables the frame had when the tape was entered.
    """

    def __init__(
        self,
        code: Any,
        namespace: dict[str, Any],
        k: int,
        inert: bool,
        assigned: list[str],
        tape_ordinal: int | None = None,
    ) -> None:
        super().__init__(k, inert, tape_ordinal)
        self.code, self.namespace = code, namespace
        self.assigned = assigned

    def _run(self) -> Any:
        ns = dict(self.namespace)
        ns["__tfviz_return__"] = _return
        handler = ReplayHandler(self.k, self.inert, (), self.tape_ordinal)
        with hooks.handling(handler), reading(self.readouts):
            try:
                exec(self.code, ns)  # noqa: S102 - the user's own statements, replayed
            except Captured as c:
                return self._reached(handler, c)
            except _Returned:
                pass
            finally:
                handler.finish()
        if self.inert:
            for name in reversed(self.assigned):
                if float_tensors(ns.get(name)):
                    return to_loss(ns[name])
        raise AnalysisError("replaying the tape block did not reach its gradient computation again")


def _flat_sources(hit: hooks.Hit) -> list[Any]:
    import tensorflow as tf

    return tf.nest.flatten(hit.sources) if hit.sources is not None else []


def _return(value: Any = None) -> None:
    raise _Returned(value)


class _NoReturns(ast.NodeTransformer):
    """``return x`` becomes a call that unwinds; nested definitions keep theirs."""

    def visit_FunctionDef(self, node: ast.AST) -> ast.AST:
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def visit_Return(self, node: ast.Return) -> ast.Expr:
        call = ast.Call(ast.Name("__tfviz_return__", ast.Load()), [node.value or ast.Constant(None)], [])
        return ast.copy_location(ast.Expr(ast.copy_location(call, node)), node)

    def visit_Global(self, node: ast.stmt) -> ast.Pass:
        return ast.copy_location(ast.Pass(), node)

    visit_Nonlocal = visit_Global


def _bodies(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(tree):
        for attr in ("body", "orelse", "finalbody"):
            seq = getattr(node, attr, None)
            if isinstance(seq, list) and seq and isinstance(seq[0], ast.stmt):
                yield seq
        for h in getattr(node, "handlers", []) or []:
            yield h.body
        for c in getattr(node, "cases", []) or []:
            yield c.body


def _calls_tape(stmt: ast.stmt, tape_name: str | None) -> bool:
    for node in ast.walk(stmt):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("gradient", "jacobian", "batch_jacobian")
            and isinstance(node.func.value, ast.Name)
            and (tape_name is None or node.func.value.id == tape_name)
        ):
            return True
    return False


def _assigned(stmts: list[ast.stmt]) -> list[str]:
    names = []
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.append(node.id)
    return names


def block_code(source: str, filename: str, with_line: int, stop_line: int | None) -> tuple[Any, list[str]]:
    """Compile the ``with`` statement at ``with_line`` and the statements after
    it in the same block, up to the one containing ``stop_line``.

    With no ``stop_line`` (the block raised) it runs up to the first later
    statement that calls ``<tape>.gradient``, if any. Returns the code and
    the names the ``with`` body assigns, last assignment last.

    >>> code, names = block_code("import math\\nwith a() as t:\\n    y = 2\\nz = t.gradient(y, x)\\n",
    ...                          "f.py", 2, 4)
    >>> names
    ['y']
    """
    tree = ast.parse(source, filename)
    for body in _bodies(tree):
        for i, stmt in enumerate(body):
            if isinstance(stmt, (ast.With, ast.AsyncWith)) and stmt.lineno == with_line:
                return _compile_range(body, i, stop_line, filename)
    raise AnalysisError(
        "cannot find the `with tf.GradientTape()` statement to replay", file=filename, line=with_line
    )


def _compile_range(
    body: list[ast.stmt], i: int, stop_line: int | None, filename: str
) -> tuple[types.CodeType, list[str]]:
    with_stmt = cast("ast.With | ast.AsyncWith", body[i])  # block_code found it
    tape_name = next(
        (item.optional_vars.id for item in with_stmt.items if isinstance(item.optional_vars, ast.Name)), None
    )
    end = i
    # a parsed statement has its end_lineno
    if stop_line is not None and not (with_stmt.lineno <= stop_line <= with_stmt.end_lineno):  # type: ignore[operator]
        for j in range(i + 1, len(body)):
            if body[j].lineno > stop_line:
                break
            end = j
    elif stop_line is None:
        for j in range(i + 1, len(body)):
            if _calls_tape(body[j], tape_name):
                end = j
                break
    stmts = [_NoReturns().visit(s) for s in body[i : end + 1]]
    module = ast.Module(body=stmts, type_ignores=[])
    ast.fix_missing_locations(module)
    try:
        code = compile(module, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise AnalysisError(
            f"cannot replay the tape block: {exc.msg}", file=filename, line=exc.lineno or with_stmt.lineno
        ) from None
    return code, _assigned(with_stmt.body)
