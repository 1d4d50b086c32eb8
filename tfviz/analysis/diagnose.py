"""Run one whole analysis: load, call, trace, judge, check against TensorFlow."""

from __future__ import annotations

import contextlib
import gc
import math
import os
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tfviz.analysis.earliercopies import Assignment, MadeBefore, holds_values_of
from tfviz.analysis.fresh import refuse_fresh, variables_made
from tfviz.analysis.lossscale import explain_scaled_overflow, unscaled
from tfviz.analysis.tapes import (
    computed_before_tape,
    inside_tape,
    loss_scale_note,
    not_watched,
    second_order_note,
    watch_hints,
)
from tfviz.engine import layerscopes
from tfviz.engine.copiedgraph import CopiedOp
from tfviz.engine.eagerstream import ASKED_AGAIN, Stream, stream_trace
from tfviz.engine.flow import union_region
from tfviz.engine.gradrules import DIFFERENTIABLE, PROBED, Prober, annotate
from tfviz.engine.graphbuild import OpGraph
from tfviz.engine.magnitude import diverged, judge_magnitudes
from tfviz.engine.nandomain import explain_nan_inputs, explain_non_finite_loss
from tfviz.engine.origins import OriginRecorder
from tfviz.engine.trace import (
    Trace,
    Truth,
    as_value,
    eager_truth,
    raising_op,
    resolve,
    trace,
    watchable,
)
from tfviz.engine.untrained import mark_not_trained
from tfviz.engine.verdicts import FrozenCopy, judge
from tfviz.engine.zeroorigin import explain_zero_origins
from tfviz.errors import AnalysisError
from tfviz.procgroup import left_the_group
from tfviz.program import hooks, readouts
from tfviz.program.frames import chosen_replica
from tfviz.program.kerasloss import explain_outputs_without_loss
from tfviz.program.launch import run_program
from tfviz.program.sources import base_variable, name_sources
from tfviz.program.training import frozen_training, reused_tape, review
from tfviz.program.watch import ZERO_STEPS, RanToEnd, Watch
from tfviz.report import FROZEN_REASON, ReadNotTrained, Report, Source
from tfviz.script import notebook
from tfviz.script.discover import (
    FoundVariable,
    ObjectWalk,
    find_variables,
    frozen_variables,
    is_tf_function,
    pick_target,
    var_node,
)
from tfviz.script.loader import Script, error_from_exception, load_script
from tfviz.script.quiet import as_python_has_it, import_tensorflow
from tfviz.script.scriptinfo import TF1_REFUSAL, choose_mode, static_targets, tf1_switch_line
from tfviz.script.sourcemap import code_at
from tfviz.script.streams import Capture
from tfviz.version import __version__
from tfviz.vocabulary import Kind, Severity

Progress = Callable[[str, float], None]

#: The fast path: a target's eager call, copied op by op as it runs
#: (:mod:`tfviz.engine.eagerstream`), stands for its trace wherever the copy is faithful.
#: Its slow twin, the trace alone, is what the differential test sets this False for
#: (tests/test_copy_vs_trace.py): the two must agree on every verdict, kind, op and line.
COPY_EAGER_CALL = True


@contextlib.contextmanager
def _as_run(path: str, args: list[str]) -> Iterator[None]:
    """In the script's folder, with the script's ``sys.argv``, for the whole analysis: the
    step is replayed and traced after the program has stopped, and a step that reads
    ``sys.argv`` must take the branch it took when the program ran. A folder it was started
    in that is gone (removed under a running shell) is not gone back to."""
    try:
        old: str | None = os.getcwd()
    except FileNotFoundError:
        old = None
    old_argv = sys.argv
    os.chdir(os.path.dirname(path))
    sys.argv = [path, *args]
    try:
        yield
    finally:
        if old is not None:
            os.chdir(old)
        sys.argv = old_argv


@dataclass
class Analysis:
    """What an analysis leaves: the report, and what tracing its step again needs (a Jacobian
    session is built from it). ``og`` is None when the step could not be traced."""

    report: Report
    script: str
    target: str
    mode: str  # "target" | "program"
    step_fn: Callable[[], Any]
    found: list[FoundVariable]
    og: OpGraph | None
    capture: Capture
    trace_error: str = ""

    def release(self) -> None:
        """Let go of the step's graph now, where only the report is kept (:func:`tfviz.check`
        on a function): freed by reference counting, not left to the cycle collector. Its
        networkx graph holds views of itself, and each copied op its output tensors, which
        point back at it: ResNet50's 39,000 objects, which the collector's next pass over
        the caller's heap walked (0.018 s) before it freed them."""
        if self.og is None:
            return
        ops = (node.get("op") for node in self.og.g.nodes.values())
        copied = {id(op.graph): op.graph for op in ops if isinstance(op, CopiedOp)}
        self.og.g.clear()
        for graph in copied.values():
            graph.release()
        self.og = None


def analyze(
    path: str,
    target: str | None = None,
    progress: Progress | None = None,
    on_text: Callable[[str, str], None] | None = None,
    *,
    run: bool = False,
    args: list[str] | tuple[str, ...] = (),
    step: int = 1,
    allow_empty: bool = False,
) -> Report:
    """Analyze the script at ``path`` and return the report (:func:`analysis` for the rest)."""
    return analysis(
        path, target, progress, on_text, run=run, args=args, step=step, allow_empty=allow_empty
    ).report


def analysis(
    path: str,
    target: str | None = None,
    progress: Progress | None = None,
    on_text: Callable[[str, str], None] | None = None,
    *,
    run: bool = False,
    args: list[str] | tuple[str, ...] = (),
    step: int = 1,
    allow_empty: bool = False,
    until: Sequence[str] = (),
    zero_steps: int = ZERO_STEPS,
    record: str | None = None,
    record_tmp: str | None = None,
    tensorboard: str | None = None,
    on_steps: Callable[[dict[str, Any]], None] | None = None,
    freeze: bool = False,
    agree: str = "ride",
) -> Analysis:
    """Analyze the script at ``path``.

    With a named ``target``, or a script that defines ``loss()``, that
    function is the target. Otherwise (or with ``run``) the script runs as a
    program with ``args`` until its ``step``-th gradient computation, and
    that step is diagnosed. Raises AnalysisError (with the user's file:line)
    when it cannot, and when there is no trainable variable to judge (unless
    ``allow_empty``): a gate must not pass a script it could not check.

    With ``until`` (conditions of :mod:`tfviz.program.watch`) the program's
    every step is watched, and the step diagnosed is the first where one of
    them holds; ``step`` is then the most steps to run. ``on_steps`` gets each
    watched step's norms per layer as it is taken (see :func:`tfviz.program.layerpoints.layer_point`).
    With ``freeze`` (a worker, whose process ends with the analysis or its session), what
    the script made is put out of the cycle collector's sight for good once it is loaded.
    ``agree``: under a strategy, how the replicas agree on a watched step: riding the
    optimizer's all-reduce of the gradients where they can ("ride"), or always with an
    all-reduce of their own ("apart", the straightforward twin the tests compare it with).
    """
    watch = (
        Watch(
            list(until),
            zero_steps,
            record,
            record_tmp=record_tmp,
            tensorboard=tensorboard,
            live=on_steps,
            ride=agree == "ride",
        )
        if until
        else None
    )
    try:
        return _analyze(path, target, progress, on_text, run, list(args), step, allow_empty, watch, freeze)
    except SystemExit as exc:
        err = error_from_exception(exc, "", path)
        err.message = f"the script called sys.exit({exc.code!r}), so it was not analyzed"
        raise err from None
    finally:
        if watch is not None:
            watch.close()  # a record of a run that failed is still the figures up to there


def _analyze(
    path: str,
    target: str | None,
    progress: Progress | None,
    on_text: Callable[[str, str], None] | None,
    run: bool,
    args: list[str],
    step: int,
    allow_empty: bool,
    watch: Watch | None = None,
    freeze: bool = False,
    given: _Step | None = None,
    given_step: Callable[[Capture], Any] | None = None,
) -> Analysis:
    """One analysis, in stages (each a function below, which says what it adds):

    1. :func:`_choose_mode`: the script read once, and the mode (a missing file or a syntax
       error fails before the slow import of TensorFlow);
    2. TensorFlow imported;
    3. :func:`_reach_step`: the program run to its step, or the script loaded and its target
       found (a function of the caller's process is its own step);
    4. :func:`_call_once`: the step called once, copied op by op as it runs; the variables it
       differentiates, and those it reads beside them;
    5. :func:`_check_variables`: the loss and the variables checked, and where each was made;
    6. :func:`_step_graph`: the step's graph (the copy of its call, or a trace) and
       TensorFlow's own verdict on it;
    7. :func:`_probe`: each op's gradient rule on the graph;
    8. :func:`_verdicts`: the verdicts, and what is said beside them;
    9. :func:`_finish`: the report's fields and notes, and the Analysis.
    """
    r = _Run(
        path,
        target,
        progress or (lambda stage, frac: None),
        args,
        step,
        allow_empty,
        watch,
        given,
        given_step,
    )
    _choose_mode(r, run)
    r.report_step("importing TensorFlow", 0.02)
    r.tf = import_tensorflow()
    r.lap("import")
    r.path = os.path.abspath(path)
    r.capture = Capture(on_text)
    # a function of the caller's process runs where the caller stands
    with _as_run(r.path, args) if not r.given_any else contextlib.nullcontext():
        r.recorder = OriginRecorder()
        with contextlib.ExitStack() as recording:
            recording.enter_context(r.recorder)
            # an op handed a variable itself (a Keras variable's ``self.w * 2.0`` in a build())
            recording.enter_context(r.recorder.noting_handed_variables())
            # a tensor computed from variables, read out into Python (``.numpy()``)
            recording.enter_context(r.recorder.noting_read_outs())
            r.predictions = recording.enter_context(hooks.predictions())
            hooks.install_predict()
            ended = _reach_step(r, recording)
            if ended is not None:
                return ended
            r.lap("load")
            if freeze:
                # The script's objects, a model's every layer among them, live as long as
                # the process: out of the collector's sight, so that each of its full
                # collections while the step is copied and judged does not walk them all
                # again (at 500 layers one such walk took 0.4 s, and the analysis made several).
                gc.freeze()
            _call_once(r)
        _check_variables(r)
        _step_graph(r)
        r.lap("trace")
        r.report_step("checking gradients", 0.8)
        _probe(r)
        r.lap("probe")
        _verdicts(r)
        r.lap("judge")
    return _finish(r)


@dataclass
class _Run:
    """One analysis as it goes through the stages of :func:`_analyze`: what each stage adds,
    for the stages after it."""

    path: str
    target: str | None
    report_step: Progress
    args: list[str]
    step: int
    allow_empty: bool
    watch: Watch | None
    given: _Step | None
    given_step: Callable[[Capture], Any] | None
    timings: dict[str, float] = field(default_factory=dict)
    clock: float = field(default_factory=time.perf_counter)
    script: Script | None = None
    mode: str = "target"
    tf: Any = None
    capture: Capture = field(init=False)
    #: made once TensorFlow is imported (it records what TensorFlow makes)
    recorder: OriginRecorder = field(init=False)
    predictions: list[Any] = field(default_factory=list)
    step_: _Step | None = None
    #: the program runs this step as a graph (tf.function, Keras fit): its trace is its truth
    graph_step: bool = False
    loss: Any = None
    eager: Any = None
    tape: Any = None
    copied: Any = None
    made_before: Any = None
    #: what the step makes again when tfviz runs it (see :mod:`tfviz.analysis.fresh`)
    remade: list[tuple[Any, Any, str]] = field(default_factory=list)
    found: list[FoundVariable] = field(default_factory=list)
    extras: list[FoundVariable] = field(default_factory=list)
    sources: list[FoundVariable] = field(default_factory=list)
    thaw: Any = None
    unwatched: dict[int, str] = field(default_factory=dict)
    done: _Traced | None = None
    trace_error: AnalysisError | None = None
    traced: Any = None
    scopes: Any = None
    prober: Prober | None = None
    report: Report | None = None

    @property
    def given_any(self) -> bool:
        """A function of the caller's process is analyzed, not a script."""
        return self.given is not None or self.given_step is not None

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round(self.timings.get(name, 0.0) + now - self.clock, 3)
        self.clock = now


def _choose_mode(r: _Run, run: bool) -> None:
    """Stage 1: the script read once and passed down, and whether its program runs to its
    step or its target is called; ``--until`` needs a program."""
    r.script = Script.read(r.path) if not r.given_any else None
    r.mode = choose_mode(r.script.tree, r.target, run) if r.script is not None else "target"
    if r.given_step is not None:
        r.mode = "program"
    if r.watch is not None and r.mode != "program":
        raise AnalysisError(
            "--until watches a program as it trains; this script is analyzed by"
            " calling a target function (pass --run to run it as a program)",
            file=r.path,
        )


def _reach_step(r: _Run, recording: contextlib.ExitStack) -> Analysis | None:
    """Stage 3: the step: the program run to it (or, watched, to the step where a condition
    held), a function of the caller's process called to it, or the script's target. Returns
    the Analysis of a watched program that ended with no step to diagnose."""
    if r.mode == "program":
        r.report_step(
            "running the program to its first gradient step"
            if r.watch is None
            else "running the program, watching every gradient step",
            0.1,
        )
        try:
            if r.given_step is not None:
                r.step_ = _captured_step(r.path, r.given_step(r.capture), None)
            else:
                r.step_ = _program_step(_read(r.script), list(r.args), r.step, r.capture, r.watch)
        except RanToEnd as end:
            assert r.watch is not None
            return _ran_to_end(r.path, end, r.watch, r.capture, r.tf.__version__)
        # Frozen copies are made before the step (build(), import time): the
        # replays below need no recording, which would double their eager time.
        recording.close()
    else:
        r.report_step("running the script", 0.1)
        r.step_ = r.given if r.given is not None else _target_step(_read(r.script), r.target, r.capture)
    # What the step reads and no recorded lineage explains: made before an in-process check,
    # unrecorded; or, in a script or program, made of values TensorFlow never saw computed
    # (``tf.constant(w.numpy())``), which only the values and the assigning line tell apart.
    step_ = r.step_
    names = vars(step_.module) if step_.module is not None else {}
    step_.earlier = MadeBefore(r.path, lambda path: step_.objects().at(path), names)
    return None


def _call_once(r: _Run) -> None:
    """Stage 4: the step called once, copied into a graph as it runs (eagerstream), unless the
    program runs it as a graph; the variables it differentiates, and those it reads beside
    them (Keras' frozen weights thawed to be judged, a target's lazily built layers called
    again)."""
    step_ = r.step_
    assert step_ is not None
    # A replica's step under a strategy is replayed eagerly first, as before: its
    # trace alone has been seen to judge otherwise than TensorFlow.
    r.graph_step = step_.compiled and not step_.capture.distributed
    r.made_before = r.recorder.made  # variables the call makes were built lazily by it
    # What a program's step makes when tfviz runs it again is made anew at each call:
    # the program's first run built every variable it keeps (analysis.fresh).
    if not r.graph_step:
        r.report_step("calling the target", 0.3)
        # A target's call is copied into a graph as it runs (eagerstream): the trace
        # below is then needed only where the copy cannot stand for it.
        with variables_made() as made:
            r.loss, r.eager, r.tape, r.copied = _first_call(
                step_.fn,
                step_.name,
                r.path,
                r.capture,
                step_.watch(),
                copy=COPY_EAGER_CALL and r.mode == "target",
                automatic=step_.automatic(),
                as_python=r.given is not None,
                recorder=r.recorder,
            )
        if r.mode == "program":  # a target's first call builds its layers lazily
            r.remade += made
    # else the program runs this step as a graph (tf.function, Keras fit): the trace
    # below is its truth, and an eager pass would only add the time and the memory of
    # a second forward pass (ResNet50's step twice over).
    r.found = step_.variables()
    # Weights of layers Keras holds frozen: read, never trained, as the script asked.
    r.thaw = thaw = _Thaw(frozen_variables(step_.objects()), r.found)
    # Variables the step reads but does not differentiate: are they trained at all?
    # Those read before its tape opened are listed too, as not watched by it.
    if r.mode == "program" and r.tape is not None:
        r.extras = step_.extras(thaw(list(r.tape.watched_variables()) + step_.read_outside()), r.found)
    elif r.mode == "program" and r.graph_step:
        r.extras = step_.extras(thaw(step_.capture.watched_variables + step_.read_in_graph()), r.found)
    if r.mode == "target":
        _add_read_variables(r.found, thaw(r.tape.watched_variables() if r.tape is not None else ()))
        if r.eager is None and any(r.recorder.made_since(r.made_before, capture_key(f)) for f in r.found):
            # Layers were built lazily by that call; a training step sees the second call.
            r.loss, r.eager, r.tape, r.copied = _first_call(
                step_.fn, step_.name, r.path, r.capture, copy=COPY_EAGER_CALL, recorder=r.recorder
            )
            step_.ran_again()
            watched = thaw(r.tape.watched_variables()) if r.tape is not None else []
            _refuse_new_variables(watched, r.found, r.recorder, step_.name, r.path)


def _check_variables(r: _Run) -> None:
    """Stage 5: the loss checked (a float scalar), a step with no variable refused (unless
    asked), each variable's origin (the line that made it), and what the program's own tape
    watched."""
    step_ = r.step_
    assert step_ is not None
    if r.loss is not None:
        _check_loss(r.loss, step_.name, step_.line, r.path, getattr(step_.capture, "api", None))
    if not r.found and not r.allow_empty:
        raise AnalysisError(
            f"found no trainable variables that '{step_.name}' could depend on, so there is no"
            " gradient to check (pass --allow-empty to accept that)",
            file=r.path,
            line=step_.line,
        )
    for f in r.found + r.extras:
        if f.source is None:
            f.source = r.recorder.origin(capture_key(f))
        if f.source is None and step_.earlier is not None:  # made before an in-process check
            f.source = step_.earlier.made_at(f.path)
    r.sources = list(r.found)
    r.found = r.found + r.extras
    r.unwatched = not_watched(r.found, step_.capture)  # as the program's own tape watched


def _step_graph(r: _Run) -> None:
    """Stage 6: the step's graph and TensorFlow's own verdict on it: the copy of its call where
    there is one, else a trace; a step that cannot be traced copied again as it runs, or
    called eagerly for its verdict. A program's step that makes variables anew is refused."""
    step_ = r.step_
    assert step_ is not None
    tf_vars = [f.tf_variable for f in r.found]
    as_graph = step_.compiled
    if r.copied is not None and r.eager is None:
        shared = ASKED_AGAIN if r.given_any else None
        r.done = _copied_step(step_, r.found, r.recorder, r.copied, r.loss, r.tape, shared)
        r.eager = r.done.traced.truth if r.done is not None else None
    r.copied = None  # the eager tensors the copy stood for: the call's activations
    r.recorder.settle()  # where the copy does not stand, what the call made has its lineage
    if r.eager is None and not as_graph:
        r.eager = eager_truth(r.tape, r.loss, tf_vars, step_.fn)
    r.tape = None  # its recorded forward pass is the largest thing held; the trace needs none of it
    r.lap("call")
    if r.done is None:
        r.report_step("tracing the graph", 0.5)
        try:
            with variables_made() as made:
                try:
                    r.done = _trace_step(step_, r.found, r.recorder, r.capture, r.unwatched)
                finally:
                    r.remade += made
        except Exception as exc:  # noqa: BLE001 - untraceable user code
            r.trace_error = error_from_exception(
                exc, f"'{step_.name}' cannot be traced by tf.function", r.path
            )
        if r.done is None and not as_graph:
            # The step runs eagerly: its eager call, copied op by op, draws what it ran (up
            # to a model.predict(), through a tf.py_function), where a trace cannot. The
            # only path left, not a fast one: its verdict is the eager run's own.
            with variables_made() as made:
                try:
                    r.done = _copied_again(step_, r.path, r.found, r.recorder, r.capture)
                finally:
                    r.remade += made
            if r.done is not None:
                r.eager, r.trace_error = r.done.traced.truth, None
    r.traced = r.done.traced if r.done is not None else None
    r.scopes = r.done.scopes if r.done is not None else layerscopes.Recorded()
    if r.eager is None:
        # The program runs this step as a graph (tf.function, Keras fit): the
        # traced verdict is its truth. Untraceable: fall back to an eager call.
        if r.traced is not None:
            r.eager = r.traced.truth
        else:
            with variables_made() as made:
                try:
                    r.eager = _eager_again(step_, r.path, r.capture, tf_vars)
                finally:
                    r.remade += made
    if r.mode == "program":
        refuse_fresh(r.remade, "step", r.path)


def _probe(r: _Run) -> None:
    """Stage 7: each op's gradient rule on the step's graph, from TensorFlow's registry, its
    backward pass, or a probe (a function of the caller's process shares the process's
    probed verdicts, as a notebook checking its model again does; a script's worker probes its
    own)."""
    r.prober = Prober(PROBED) if r.given_any else Prober()
    if r.done is not None:
        r.prober.answered = r.done.traced.answered
        annotate(r.done.traced.og.g, r.done.region, r.prober)


def _verdicts(r: _Run) -> None:
    """Stage 8: the verdicts (:func:`tfviz.engine.verdicts.judge`), and beside them: the
    program's own gradient norms, layer scopes, training review, frozen and reused-tape
    problems, read-out values, gradient size, unwatched tensors, what a NaN or a zero came
    from, and the notes on second order, loss scaling and outputs without a loss."""
    step_ = r.step_
    assert step_ is not None
    found = r.found
    report = r.report = judge(
        found=found,
        traced=r.traced,
        eager=r.eager,
        frozen=r.done.frozen if r.done is not None else [],
        trace_error=r.trace_error,
        target_name=step_.name,
    )
    _programs_own_norms(report, found, step_.capture)
    op_scopes = {o.scope for o in report.graph.ops}
    report.graph.layer_scopes = layerscopes.in_graph(r.scopes.names, op_scopes)
    report.graph.layer_attributes = layerscopes.in_graph(r.scopes.attributes, op_scopes)
    review(report, r.sources, r.extras, step_.objects(), step_.capture)
    report.read_not_trained.extend(
        ReadNotTrained(name=name, reason=FROZEN_REASON, tf_name=keras_path)
        for name, keras_path in r.thaw.skipped.values()
    )
    untrainable = frozen_training(step_.capture, r.thaw.skipped) + reused_tape(step_.capture, found)
    report.problems.extend(untrainable)
    report.ok = report.ok and not untrainable
    _read_out(report, found, getattr(getattr(step_.fn, "readouts", None), "variables", {}))
    readouts.predicted(report, found, r.predictions, "step" if r.mode == "program" else "target")
    report.problems.extend(judge_magnitudes(report.variables, report.graph))
    watch_hints(report, found, r.unwatched)
    if r.traced is not None:
        with r.capture.active():
            explain_nan_inputs(report, r.traced.og.g, step_.fn, chosen_replica(), step_.compiled)
            if not _loss_finite(r):
                explain_non_finite_loss(report, r.traced.og.g, step_.fn, chosen_replica(), step_.compiled)
            explain_zero_origins(report, r.traced.og.g, step_.fn)
    scaler = getattr(step_.capture, "loss_scaler", None)
    if scaler is not None:  # a NaN of the loss scale's own making: TensorFlow's call without it
        by_name = {f.path: f.tf_variable for f in found}

        def unscaled_norms() -> dict[int, float] | None:
            try:
                with unscaled(scaler), r.capture.active():
                    truth = _eager_again(step_, r.path, r.capture, list(by_name.values()))
            except AnalysisError:  # the step raised, unscaled: nothing to tell by
                return None
            return None if truth.raised else truth.norms

        explain_scaled_overflow(report, scaler, by_name, unscaled_norms)
    mark_not_trained(report)  # the graph document and its exports mark it, not the window only
    second_order_note(report, step_.capture)
    loss_scale_note(report, step_.capture)
    explain_outputs_without_loss(report, found, step_.capture)


def _loss_finite(r: _Run) -> bool:
    """Whether the step's loss is finite: the eager call's, else the trace's (a graph step's);
    a loss that is no floating-point number, or that was not measured, counts as finite."""
    from tfviz.engine.trace import finite_value

    said = finite_value(r.loss) if r.loss is not None else None
    if said is None and r.traced is not None:
        said = r.traced.loss_finite
    return said is not False


def _finish(r: _Run) -> Analysis:
    """Stage 9: the report's own fields (script, target, versions, the program's output,
    timings), the watched run's summary, the notes (a process the program left running, a
    notebook's cells), and the Analysis that keeps what tracing the step again needs."""
    step_, report = r.step_, r.report
    assert step_ is not None and report is not None and r.prober is not None
    report.script = r.path
    report.target = step_.name
    report.mode = r.mode
    report.tfviz = __version__
    report.tensorflow = r.tf.__version__
    report.stdout = r.capture.out.getvalue()
    report.stderr = r.capture.err.getvalue()
    report.timings_s = {**r.timings, "probes": float(r.prober.probes)}
    report.targets = step_.targets
    if r.watch is not None and step_.capture is not None:
        names = {v.tf_name.split(":", 1)[0]: v.name for v in report.variables}
        report.watch = r.watch.summary(step_.capture.count, step_.name, names)
        diverged(report)  # an exploding gradient that grew over the run: training's own doing
        report.notes.extend(r.watch.notes)
        if r.watch.fired is not None:
            report.ok = False  # the condition asked for: a gate fails on it
    for pid, name in left_the_group():  # not ended with the worker: say so, not a surprise
        report.notes.append(
            f"the program started process {pid} ({name}) in a session of its own (setsid,"
            " start_new_session=True); tfviz ends what the program starts, but not that: it is"
            " still running"
        )
    _every_problem_placed(r)
    if r.given_any:  # a check in process, from a notebook: its cells as IPython names them
        notebook.place_in_session(report)
    nb = notebook.known(r.path)
    if nb is not None:  # said by cell and line within it, as the user sees the notebook
        report.notes[:0] = nb.notes()
        notebook.place(report, r.path)
    r.report_step("done", 1.0)
    return Analysis(
        report=report,
        script=r.path,
        target=step_.name,
        mode=r.mode,
        step_fn=step_.fn,
        found=r.found,
        og=r.traced.og if r.traced is not None else None,
        capture=r.capture,
        trace_error=r.trace_error.message if r.trace_error is not None else "",
    )


def _every_problem_placed(r: _Run) -> None:
    """Every problem at a line of the user's code, so that a CI annotation, a pytest message
    and ``problem.source.line`` always have one. A problem no op of the step places (a
    variable the target never reads, a zero whose op cannot be told) is put where its first
    variable was made, as the script's own variables are; where that is not known either (a
    variable made before an in-process check), at the step: the gradient call a program's
    step was captured at, or the target's ``def``, whose code is where the read is missing."""
    step_, report = r.step_, r.report
    assert step_ is not None and report is not None
    where = step_.capture.where if step_.capture is not None else None
    if where is None and step_.line:
        where = Source(r.path, step_.line, code_at(r.path, step_.line))
    made = {v.name: v.source for v in report.variables if v.source is not None}
    for p in report.problems:
        if p.source is None:
            p.source = next((made[name] for name in p.variables if name in made), where)


class _Step:
    """What the engine differentiates: a zero-argument callable returning the
    loss, and where its variables come from."""

    def __init__(
        self, name: str, fn: Callable[[], Any], module: Any, line: int | None, targets: list[str]
    ) -> None:
        self.name, self.fn, self.module, self.line, self.targets = name, fn, module, line, targets
        self.fixed: list[FoundVariable] | None = None
        self.capture: Any = None  # the program's captured step (program mode)
        #: where the step's objects were assigned: a function of the caller's process holds
        #: what was made before the check, unrecorded, and a script may hold a copy made of a
        #: variable's values read out (``.numpy()``), whose lineage TensorFlow never saw: their
        #: frozen copies and lines are found by values and by the lines that assigned them
        self.earlier: MadeBefore | None = None
        self._walk: ObjectWalk | None = None

    @property
    def compiled(self) -> bool:
        """The program ran its step as a graph (a ``tf.function``, Keras' compiled step)."""
        return self.capture is not None and bool(self.capture.as_graph)

    def objects(self) -> ObjectWalk:
        """The walk of the script's objects, taken once after the step ran."""
        if self._walk is None:
            self._walk = ObjectWalk(self.module)
        return self._walk

    def tape_at(self) -> Source | None:
        """Where a program's step opened its tape (None: a target's call, no tape of its own)."""
        return getattr(self.capture, "tape_at", None)

    def ran_again(self) -> None:
        """The step ran again (a lazily built model's second call): what it holds may differ."""
        self._walk = None

    def extras(self, read: Any, sources: list[FoundVariable]) -> list[FoundVariable]:
        """Trainable variables the step read that are not among its sources, named. A
        strategy's mirrored variable and its replicas' copies are one variable: a replica's
        step differentiates the copies, while the script holds the mirrored one."""
        known = set().union(*(_identities(f.tf_variable) for f in sources))
        others = []
        for v in read:
            if v.trainable and not _identities(v) & known:
                known |= _identities(v)
                others.append(v)
        return name_sources(others, self.module.__dict__) if others else []

    def read_outside(self) -> list[Any]:
        """Trainable variables the replayed step read while its tape did not record."""
        return self._by_handles(getattr(self.fn, "read_outside", None))

    def read_in_graph(self) -> list[Any]:
        """Trainable variables a graph step's own trace read, with its tape recording or not."""
        return self._by_handles(getattr(self.capture, "read_in_graph", None))

    def _by_handles(self, handles: set[int] | None) -> list[Any]:
        """The program's variables whose handles are among ``handles`` (ids)."""
        if not handles:
            return []
        return [
            f.tf_variable
            for f in find_variables(self.module, self.objects())
            if id(getattr(f.tf_variable, "handle", None)) in handles
        ]

    def variables(self) -> list[FoundVariable]:
        return list(self.fixed) if self.fixed is not None else find_variables(self.module, self.objects())

    def watch(self) -> list[Any]:
        """Tensor sources (``tape.watch(x)`` in the program); variables are watched anyway,
        but by a tape opened with ``watch_accessed_variables=False``: then those the program's
        tape watched."""
        import tensorflow as tf

        told = [] if self.automatic() else list(getattr(self.capture, "watched_variables", ()))
        return told + watchable(
            [f.tf_variable for f in self.fixed or () if not isinstance(f.tf_variable, tf.Variable)]
        )

    def automatic(self) -> bool:
        """Whether the step's tape watches the variables it reads on its own."""
        return bool(getattr(self.capture, "tape_watches_accessed", True))


def _identities(v: Any) -> set[int]:
    """ids of ``v`` and, for a strategy's distributed variable, of each replica's copy."""
    import tensorflow as tf

    copies = v.values if isinstance(v, tf.distribute.DistributedValues) else ()
    return {id(v), *(id(c) for c in copies)}


def _read(script: Script | None) -> Script:
    assert script is not None  # read unless a function was given
    return script


def analysis_of_function(
    fn: Callable[..., Any],
    args: tuple[Any, ...] | None = None,
    kwargs: dict[str, Any] | None = None,
    *,
    progress: Progress | None = None,
    on_text: Callable[[str, str], None] | None = None,
    allow_empty: bool = False,
) -> Analysis:
    """Analyze a function of this process on its live objects (:func:`tfviz.check` with a
    function): with no ``args``, a zero-argument loss function, as a ``loss()`` of a script is
    (its variables found among what it can reach: its module's names and its closure); with
    ``args`` (or ``kwargs``), a training step, called once with them and captured at its first
    gradient computation as a program's step is, and stopped before its update. Raises
    AnalysisError as :func:`analysis` does; it patches TensorFlow while it runs, and the
    caller undoes that (:mod:`tfviz.api`)."""
    inner: Any = getattr(fn, "python_function", fn) if is_tf_function(fn) else fn
    code = getattr(inner, "__code__", None)
    given_args = args is not None or kwargs is not None
    # tfviz.check(model), or with args its forward pass: a model, no loss (a callable object
    # that is a training step, a tf.Module's __call__, is checked as one)
    if code is None and (_keras_layer(fn) if given_args else hasattr(fn, "trainable_variables")):
        raise AnalysisError(
            f"{fn!r} is a model, not a loss: pass a function that computes the loss with it, such as"
            " tfviz.check(lambda: loss_fn(y, model(x))), or a training step with its arguments"
            " (tfviz.check(train_step, args=(x, y)))"
        )
    if given_args:
        from tfviz.program.launch import run_step_function

        def given_step(capture: Capture) -> Any:
            return run_step_function(fn, tuple(args or ()), dict(kwargs or {}), capture)

        where = code.co_filename if code is not None else "<step function>"
        return _analyze(where, None, progress, on_text, False, [], 1, allow_empty, given_step=given_step)
    if code is None:
        raise AnalysisError(
            f"{fn!r} is not a Python function: pass a function that takes no arguments and returns the loss"
        )
    name = str(getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None) or "loss")
    namespace = types.ModuleType(getattr(inner, "__module__", None) or "tfviz_target")
    namespace.__dict__.update(
        {k: v for k, v in getattr(inner, "__globals__", {}).items() if not k.startswith("_")}
    )
    for var, cell in zip(code.co_freevars, getattr(inner, "__closure__", None) or ()):
        try:
            namespace.__dict__[var] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
    given = _Step(name, inner, namespace, code.co_firstlineno, [name])
    return _analyze(code.co_filename, None, progress, on_text, False, [], 1, allow_empty, given=given)


def _keras_layer(fn: Any) -> bool:
    """Whether ``fn`` is a Keras layer or model, whose call is its forward pass."""
    return any(c.__name__ == "Layer" and c.__module__.startswith("keras") for c in type(fn).__mro__)


def _target_step(script: Script, target: str | None, capture: Capture) -> _Step:
    path = script.path
    loaded = load_script(script, capture)
    import tensorflow as tf

    if not tf.executing_eagerly():  # the script switched TensorFlow 1 graph mode on
        raise AnalysisError(TF1_REFUSAL, file=path, line=tf1_switch_line(script.tree))
    name, target_obj = pick_target(loaded.module, target, path)
    fn = target_obj.python_function if is_tf_function(target_obj) else target_obj
    targets = sorted({*static_targets(script.tree), name})
    return _Step(name, fn, loaded.module, fn.__code__.co_firstlineno, targets)


def _ran_to_end(path: str, end: RanToEnd, watch: Watch, capture: Capture, tf_version: str) -> Analysis:
    """A watched program that finished with no condition met: nothing to diagnose, all well."""
    report = Report(
        script=path,
        target="the program",
        ok=True,
        traced=False,
        mode="program",
        tfviz=__version__,
        tensorflow=tf_version,
        stdout=capture.out.getvalue(),
        stderr=capture.err.getvalue(),
    )
    report.watch = watch.summary(None, f"the program ended after {end.steps:,} gradient step(s)")
    report.notes.extend(watch.notes)
    return Analysis(
        report=report,
        script=path,
        target="the program",
        mode="program",
        step_fn=lambda: None,
        found=[],
        og=None,
        capture=capture,
        trace_error="",
    )


def _program_step(
    script: Script, args: list[str], n: int, capture: Capture, watch: Watch | None = None
) -> _Step:
    return _captured_step(script.path, run_program(script, args, n, capture, watch), script.tree)


def _captured_step(path: str, captured: Any, tree: Any) -> _Step:
    """The step a program's run (or a step function's call) captured, as the engine takes it."""
    main = types.ModuleType("__main__")  # where frozen copies are looked for by name
    main.__dict__.update(captured.namespace)
    step = _Step(
        captured.description,
        captured.replay,
        main,
        captured.where.line if captured.where else None,
        static_targets(tree) if tree is not None else [],
    )
    step.fixed = captured.sources
    step.capture = captured
    if not captured.sources:
        raise AnalysisError(
            f"the gradient computation ({captured.description}) has no variable or"
            " watched tensor that tfviz can follow" + _empty_listing(captured, main),
            file=path,
            line=step.line,
        )
    return step


def _empty_listing(captured: Any, main: types.ModuleType) -> str:
    """Why a step differentiates nothing, where its list was read from a layer's
    ``trainable_variables`` while it had none (before a lazily built model's first call)
    and the layer has some now: a list does not grow when the model is built."""
    for listing in captured.listings:
        if listing.ids:
            continue
        try:
            now = list(listing.layer.trainable_variables)
        except Exception:  # noqa: BLE001 - a layer that cannot list its variables now
            continue
        if not now:
            continue
        name = next((k for k, v in main.__dict__.items() if v is listing.layer), listing.layer.name)
        where = listing.where
        code = f" (`{where.code.strip()}`)" if where.code else ""
        return (
            f": the list it is passed was read from `{name}.trainable_variables` at"
            f" {os.path.basename(where.file)}:{where.line}{code} before {name} was built, when it"
            f" had no variables, and a list read then stays empty; {name} has"
            f" {len(now)} trainable variables now, and the step trains none of them. Read the"
            f" list after {name}'s first call, or pass {name}.trainable_variables to the"
            " gradient call itself"
        )
    return ""


@dataclass
class _Traced:
    """A step traced with its gradient, and what the trace found on the way."""

    traced: Trace
    region: set[str]  # the nodes on a variable-to-target path
    frozen: list[FrozenCopy]
    scopes: layerscopes.Recorded


def _trace_step(
    step_: _Step,
    found: list[FoundVariable],
    recorder: OriginRecorder,
    capture: Capture,
    unwatched: dict[int, str],
) -> _Traced:
    """Trace the step with its gradient (:func:`~tfviz.engine.trace.trace`), linking ``found``
    into the graph and recording the layers' scopes (``unwatched``: the sources the step's
    tape did not watch, :func:`~tfviz.analysis.tapes.not_watched`); raises what the trace raises."""
    frozen: list[FrozenCopy] = []
    step_.ran_again()  # the trace runs the step's Python: the linker walks what it left
    linker = _Linker.of_step(step_, found, recorder, frozen, unwatched=unwatched)
    with capture.active(), layerscopes.recording() as scopes:
        ids = {id(f.tf_variable) for f in found if id(f) in unwatched}
        tf_vars = [f.tf_variable for f in found]
        traced = trace(step_.fn, tf_vars, linker, unwatched=ids, compiled=step_.compiled)
    return _Traced(traced, linker.region, frozen, scopes)


@dataclass
class _Copied:
    """The eager call's ops, copied into a graph as they ran, and the layers' scopes."""

    stream: Stream
    scopes: layerscopes.Recorded


def _first_call(
    fn: Callable[[], Any],
    name: str,
    path: str,
    capture: Capture,
    watch: Sequence[Any] = (),
    copy: bool = False,
    automatic: bool = True,
    lenient: bool = False,
    as_python: bool = False,
    recorder: OriginRecorder | None = None,
) -> tuple[Any, Truth | None, Any, _Copied | None]:
    """Call the target once, as the user's first call would, under a tape (with ``copy``,
    its ops copied into a graph as they run: :mod:`tfviz.engine.eagerstream`).

    When the call itself raises because the tape is watching (a nested
    tf.function builds its broken gradient right away), that error is
    TensorFlow's eager verdict; the call is repeated without a tape.
    Returns the loss, that verdict (None when the call succeeded), the
    tape (None when it did not) and the copy. With ``as_python`` (a function of the
    caller's process, its output shown as it runs), the call has the warnings and log
    levels the caller has, not tfviz's silence. With ``recorder`` (recording) and ``copy``,
    the copy hands the recorder the call's lineage (:meth:`OriginRecorder.held`).
    """
    import tensorflow as tf

    with capture.active(), as_python_has_it() if as_python else contextlib.nullcontext():
        try:
            with contextlib.ExitStack() as copying:
                copied = None
                if copy:
                    stream = Stream(lenient=lenient)
                    if recorder is not None:  # its lineage of the call's ops, handed over by the copy
                        stream.lineage = []
                        copying.enter_context(
                            recorder.held(lambda: stream.refused is not None, stream.lineage)
                        )
                        stream.on_release.append(recorder.let_go)
                    scopes = copying.enter_context(layerscopes.recording(eager=True))
                    copied = _Copied(copying.enter_context(stream), scopes)
                # as the step's own tape watches (watch_accessed_variables=False: only what it was told)
                with tf.GradientTape(watch_accessed_variables=automatic) as tape:
                    tape.watch(list(watch))
                    loss = as_value(fn())
            return loss, None, tape, copied
        except Exception as exc:  # noqa: BLE001 - the user's code
            first = exc
        try:
            loss = as_value(fn())
        except Exception:  # noqa: BLE001
            raise error_from_exception(first, f"the target '{name}' raised", path) from None
    return loss, Truth(error=first, error_op=raising_op(first)), None, None


def _copied_step(
    step_: _Step,
    found: list[FoundVariable],
    recorder: OriginRecorder,
    copied: _Copied,
    loss: Any,
    tape: Any,
    asked_again: dict[tuple[Any, ...], dict[int, bool]] | None = None,
) -> _Traced | None:
    """The step's trace from its copied eager call, with the tape's gradients; None where
    the copy cannot stand for a trace (the tape is then left unasked). ``asked_again``: the
    gradient functions' answers shared with the process's earlier analyses
    (:data:`tfviz.engine.eagerstream.ASKED_AGAIN`)."""
    frozen: list[FrozenCopy] = []
    linker = _Linker.of_step(step_, found, recorder, frozen, copied=True)
    tf_vars = [f.tf_variable for f in found]
    traced = stream_trace(copied.stream, step_.fn, loss, tape, tf_vars, linker, asked_again)
    return _Traced(traced, linker.region, frozen, copied.scopes) if traced is not None else None


def _copied_again(
    step_: _Step, path: str, found: list[FoundVariable], recorder: OriginRecorder, capture: Capture
) -> _Traced | None:
    """The step's eager call once more, copied as it runs (:func:`_copied_step`); None where
    the copy cannot stand for a trace, or the call raises."""
    try:
        loss, eager, tape, copied = _first_call(
            step_.fn,
            step_.name,
            path,
            capture,
            step_.watch(),
            copy=True,
            automatic=step_.automatic(),
            lenient=True,
        )
    except AnalysisError:
        return None
    if eager is not None or copied is None or tape is None:
        return None
    return _copied_step(step_, found, recorder, copied, loss, tape)


def _eager_again(step_: _Step, path: str, capture: Capture, tf_vars: list[Any]) -> Truth:
    loss, eager, tape, _ = _first_call(
        step_.fn, step_.name, path, capture, step_.watch(), automatic=step_.automatic()
    )
    return eager if eager is not None else eager_truth(tape, loss, tf_vars, step_.fn)


def _refuse_new_variables(
    watched: list[Any], found: list[FoundVariable], recorder: OriginRecorder, name: str, path: str
) -> None:
    """A variable the target creates again on every call is never trained:
    each step would start from a fresh one (``watched``: what the call's tape watched)."""
    known = {id(f.tf_variable) for f in found}
    fresh = [v for v in watched if v.trainable and id(v) not in known]
    if not fresh:
        return
    v = fresh[0]
    where = recorder.origin(v.handle)
    label = v.name.split(":")[0]
    raise AnalysisError(
        f"the target '{name}' creates tf.Variable '{label}' on each call, so training would never"
        " update it; create it once outside the target (at module level, or in a layer's build())",
        file=where.file if where else path,
        line=where.line if where else None,
        code=where.code if where else "",
    )


def _programs_own_norms(report: Report, found: list[FoundVariable], capture: Any) -> None:
    """Each ``|grad|`` as the program's own gradient call returned it at its step, where the
    program ran the step eagerly: tfviz hands it TensorFlow's gradients, so they are at hand.
    The replay that tfviz judges the step by runs the step again, and draws its own random
    numbers (dropout, sampled noise, sampled actions), so its sizes can differ from the
    program's. A variable with no gradient keeps none."""
    if capture is None:
        return
    norms = capture.handed_norms()
    if not norms:
        return
    rows = {v.name: v for v in report.variables}
    for f in found:
        row = rows.get(f.path)
        norm = norms.get(id(base_variable(f.tf_variable)))
        if row is not None and norm is not None and row.grad_norm is not None and math.isfinite(norm):
            row.grad_norm = norm


def _read_out(report: Report, found: list[FoundVariable], read: dict[int, Any]) -> None:
    """A variable the step never reads in TensorFlow but reads out into Python
    (``np.exp(v.numpy())``): say where, for that is why it gets no gradient."""
    if not read:
        return
    by_path = {f.path: read.get(id(f.tf_variable)) or read.get(id(f.variable)) for f in found}
    for row in report.variables:
        where = by_path.get(row.name)
        if where is None or row.kind != Kind.NOT_READ:
            continue
        why = (
            f"its value is read out into Python (.numpy()) at {where.label(os.path.basename)}, so the loss"
            " gets a plain number: no gradient can reach it"
        )
        row.explanation = why
        for p in report.problems:
            if p.kind == Kind.NOT_READ and row.name in p.variables:
                p.message, p.source, p.severity = f"{row.name}: {why}", where, Severity.ERROR
    report.ok = report.ok and not any(p.severity == Severity.ERROR for p in report.problems)


def _check_loss(loss: Any, name: str, line: int | None, path: str, api: str | None = None) -> None:
    """A loss TensorFlow can differentiate: a tensor (a program's step hands its gradient call,
    ``api``, what it computed; a NumPy value there was computed outside TensorFlow, which the tape,
    recording TensorFlow's ops alone, never saw, and ``tape.gradient`` raises on it), of a
    floating-point type."""
    import tensorflow as tf

    if not tf.is_tensor(loss):
        what = f"{type(loss).__module__.split('.')[0]} {type(loss).__name__}".replace("builtins ", "")
        raise AnalysisError(
            (
                f"the loss handed to {api} is a {what}, not a TensorFlow tensor:"
                " computed outside TensorFlow (NumPy, .numpy(), float()), the tape never recorded"
                " it, and tape.gradient raises an AttributeError on it; compute the loss with"
                " TensorFlow ops (tf.reduce_mean, tf.square) inside the `with tf.GradientTape()` block"
            )
            if api is not None
            else f"the target '{name}' returned {type(loss).__name__}, not a tensor;"
            " it must return the loss as a TensorFlow tensor",
            file=path,
            line=line,
        )
    if loss.dtype.name not in DIFFERENTIABLE:
        raise AnalysisError(
            f"the target '{name}' returned a {loss.dtype.name} tensor; a loss must be"
            " floating-point to have a gradient",
            file=path,
        )


class _Thaw:
    """Filters the variables a step read of those Keras holds frozen (``frozen``: by id, with
    their paths), unless the step differentiates them (``found``), noting each it drops."""

    def __init__(self, frozen: dict[int, tuple[str, str]], found: list[FoundVariable]) -> None:
        self.frozen = frozen
        self.sources = {id(f.tf_variable) for f in found}
        #: id -> (Python path, Keras path) of each frozen variable read and left out
        self.skipped: dict[int, tuple[str, str]] = {}

    def __call__(self, read: Any) -> list[Any]:
        kept = []
        for v in read:
            paths = self.frozen.get(id(v))
            if paths is None or id(v) in self.sources:
                kept.append(v)
            else:
                self.skipped[id(v)] = paths
        return kept


def _add_read_variables(found: list[FoundVariable], read: Any) -> None:
    known = {id(f.tf_variable) for f in found}
    for v in read:
        if v.trainable and id(v) not in known:
            known.add(id(v))
            found.append(FoundVariable(v.name.split(":")[0], v, v))


def capture_key(f: FoundVariable) -> Any:
    """What a trace captures for a source: a variable's handle, or the tensor itself."""
    handle = getattr(f.tf_variable, "handle", None)
    return (
        handle
        if handle is not None
        and getattr(f.tf_variable, "dtype", None) is not None
        and (hasattr(f.tf_variable, "assign"))
        else f.tf_variable
    )


class _Linker:
    """Adds variable nodes to the traced graph and finds frozen copies."""

    def __init__(
        self,
        found: list[FoundVariable],
        recorder: OriginRecorder,
        objects: ObjectWalk,
        frozen: list[FrozenCopy],
        fn: Any = None,
        copied: bool = False,
        unwatched: dict[int, str] | None = None,
        earlier: MadeBefore | None = None,
        tape_at: Source | None = None,
    ) -> None:
        self.found = found
        #: where the step's own tape opens: a tensor computed from a variable just before it,
        #: in the step's loop or function, is cut by the tape (``outside_tape``), not a frozen copy
        self.tape_at = tape_at
        self.earlier = earlier  # where the objects were made unrecorded (a check in process)
        self.unwatched = unwatched or {}  # id of a source -> why the step's tape never watched it
        self.fn = fn  # the step: the tensors its run made for live sources
        self.copied = copied  # the graph is an eager call's copy (eagerstream), not a trace
        self.recorder = recorder
        self.objects = objects
        self.frozen = frozen
        self.region: set[str] = set()
        self._paths: dict[int, str] | None = None
        self._by_size: dict[int | None, list[tuple[int, FoundVariable]]] | None = None
        #: the arrays the program read out of tensors computed from variables (:meth:`_read_out_from`)
        self._read_outs: list[tuple[Any, Callable[[], frozenset[int]], Source | None]] = []

    @classmethod
    def of_step(
        cls,
        step_: _Step,
        found: list[FoundVariable],
        recorder: OriginRecorder,
        frozen: list[FrozenCopy],
        copied: bool = False,
        unwatched: dict[int, str] | None = None,
    ) -> _Linker:
        """The linker of ``step_``'s graph: the step's objects and function, what was made
        before it (a check in process) and where its own tape opens (a program's step)."""
        return cls(
            found,
            recorder,
            step_.objects(),
            frozen,
            step_.fn,
            copied=copied,
            unwatched=unwatched,
            earlier=step_.earlier,
            tape_at=step_.tape_at(),
        )

    def _held(self, tensor: Any) -> str | None:
        """The Python path at which the script holds ``tensor``; one walk of its objects
        serves every captured tensor (a walk per capture would repeat it)."""
        if self._paths is None:
            self._paths = {}
            for path, obj in self.objects.pairs():
                self._paths.setdefault(id(obj), path)
        return self._paths.get(id(tensor))

    def _copied_from(self, ext: Any, handles: list[tuple[int, FoundVariable]]) -> frozenset[int]:
        """The handles of the variables whose values ``ext`` holds: made before an in-process
        check, it has no recorded lineage (:mod:`tfviz.analysis.earliercopies`). Only those of
        its number of elements are read (a ResNet50 step captures 54 tensors beside 214
        variables)."""
        if self._by_size is None:
            self._by_size = {}
            for h, f in handles:
                self._by_size.setdefault(f.tf_variable.shape.num_elements(), []).append((h, f))
        size = ext.shape.num_elements()
        same = self._by_size.get(size, []) if size else []
        if not same:
            return frozenset()
        import tensorflow as tf

        with tf.init_scope():  # a trace links inside its graph, where values cannot be read
            return frozenset(h for h, f in same if holds_values_of(ext, f.tf_variable))

    def _computed_from(
        self, made: Assignment | None, handles: list[tuple[int, FoundVariable]]
    ) -> frozenset[int]:
        """The handles of the variables that the line which made a capture reads by the
        place that holds them (``scaled = weight * 0.5``), each made before that line: a copy
        whose values cannot tell (``weight`` all ones), made before an in-process check."""
        if made is None or not made.reads:
            return frozenset()
        assert self.earlier is not None
        out = set()
        for h, f in handles:
            if f.path not in made.reads:
                continue
            own = self.earlier.made_at(f.path)
            if own is not None and self.earlier.made_before(own, made.source):
                out.add(h)
        return frozenset(out)

    def _link_copy(
        self,
        g: Any,
        nid: str,
        dtype: str,
        made_from: frozenset[int],
        origin: Source | None,
        held_at: str | None,
        handles: list[tuple[int, FoundVariable]],
        read_out: bool = False,
    ) -> None:
        """An edge from each variable whose handle is in ``made_from`` to node ``nid``, a copy
        of it the step reads: cut where the copy was made (``origin``), before the tape in the
        step itself (``outside_tape``) or before the step (``frozen_copy``)."""
        if not made_from:
            return
        outside = computed_before_tape(origin, self.tape_at)
        # an array read out under the step's own tape: the read cuts it, the step's own code
        under = read_out and not outside and inside_tape(origin, self.tape_at)
        for handle_id, f in handles:  # a tensor source has no handle
            if handle_id not in made_from:
                continue
            copy = FrozenCopy(variable=f.path, node=nid, held_at=held_at, origin=origin, read_out=read_out)
            self.frozen.append(copy)
            if under:
                status, message = Kind.NOT_READ, copy.read_under_tape()
            elif outside:
                status, message = Kind.OUTSIDE_TAPE, copy.outside_tape(self.tape_at)
            else:
                status, message = Kind.FROZEN_COPY, copy.describe()
            g.add_edge(
                var_node(f),
                nid,
                ports=[(0, 0)],
                dtype=dtype,
                shape=None,
                boundary=False,
                back=False,
                synthetic=True,
                status=status,
                status_fixed=True,
                message=message,
            )

    def _link_read_out_constants(self, g: Any, handles: list[tuple[int, FoundVariable]]) -> None:
        """A trace embeds a NumPy value the step's code hands TensorFlow as a constant
        (``tf.constant(pred)``): where that value is an array read out of a tensor computed
        from variables (:meth:`_read_out_from`), the constant is linked as a copy of them."""
        from tensorflow.python.framework import tensor_util

        for nid, d in list(g.nodes(data=True)):
            op = d.get("op")
            if d.get("type") != "Const" or op is None or any(g.predecessors(nid)):
                continue
            try:
                value = tensor_util.MakeNdarray(op.get_attr("value"))
            except Exception:  # noqa: BLE001 - a constant whose value cannot be read is no evidence
                continue
            if value.dtype.kind != "f":
                continue
            made_from, origin, held_at = self._read_out_from(value)
            if not made_from:
                continue
            if held_at:  # the graph names it as the user's code does
                d["label"] = held_at
            self._link_copy(g, nid, op.outputs[0].dtype.name, made_from, origin, held_at, handles, True)

    def _read_out_from(self, ext: Any) -> tuple[frozenset[int], Source | None, str | None]:
        """The handles of the variables ``ext`` was computed from, the user's line and the
        place the script holds the array at, where ``ext`` holds the values of an array the
        program read out of a tensor computed from them (``tf.constant(pred)`` of ``pred =
        model(x).numpy()``): no op links the two. Of the arrays that match (one read out at
        each run of that line), the one the script holds names it."""
        found: tuple[frozenset[int], Source | None, str | None] = (frozenset(), None, None)
        for array, variables, source in self._read_outs:
            if not holds_values_of(ext, array):
                continue
            held_at = self._held(array)
            if not found[0] or held_at:
                found = (variables(), source, held_at)
            if found[0] and held_at:
                break
        return found

    def _name_integer(self, g: Any, nid: str, ext: Any) -> None:
        """An integer or bool tensor the step captured, by the Python path the script holds
        it at (``labels``). In a copy, one the script does not hold is what a trace makes a
        constant of: a Python value TensorFlow turned into a tensor (an axis, a shape)."""
        if nid not in g or not (ext.dtype.is_integer or ext.dtype.is_bool):
            return
        held_at = self._held(ext)
        if held_at:
            g.nodes[nid]["label"] = held_at
        elif self.copied:
            g.nodes[nid]["type"] = "Const"

    def __call__(self, og: OpGraph, fg: Any) -> set[str]:
        g = og.g
        f: FoundVariable | None  # one of self.found, or None where a capture is none of them
        by_handle = {id(capture_key(f)): f for f in self.found}
        for f in self.found:
            g.add_node(
                var_node(f),
                op=None,
                name=f.path,
                type="Variable",
                scope="",
                group="",
                outputs=[],
                source=None,
                is_variable=True,
            )
        for f, t in zip(self.found, resolve(self.fn, [f.tf_variable for f in self.found])):
            if t is f.tf_variable:
                continue
            if hasattr(t, "numpy"):  # the run passed an eager tensor: the trace captured it
                by_handle[id(t)] = f
            elif getattr(t, "graph", None) is fg and t.op.name in g:
                g.add_edge(
                    var_node(f),
                    t.op.name,
                    ports=[(0, t.value_index)],
                    dtype=t.dtype.name,
                    shape=[],
                    boundary=True,
                    back=False,
                    synthetic=False,
                )
        # each variable's handle, read once (a capture made from variables is checked against
        # them all: ResNet50's 270 float captures times its 214 variables were 57,000 reads)
        held = [(getattr(f.tf_variable, "handle", None), f) for f in self.found]
        handles = [(id(h), f) for h, f in held if h is not None]
        self._by_size = None  # built from these handles when first asked
        self._read_outs = self.recorder.read_outs()  # their lineage is walked only where one matches
        for ext, internal in fg.captures:
            nid = internal.op.name
            f = by_handle.get(id(ext))
            if f is not None:
                g.add_edge(
                    var_node(f),
                    nid,
                    ports=[(0, 0)],
                    dtype="resource",
                    shape=[],
                    boundary=True,
                    back=False,
                    synthetic=False,
                )
                continue
            if ext.dtype.name not in DIFFERENTIABLE or ext.dtype.name in ("resource", "variant"):
                self._name_integer(g, nid, ext)
                continue
            held_at = self._held(ext)
            if held_at and nid in g:  # the graph names it as the user's code does
                g.nodes[nid]["label"] = held_at
            made_from = self.recorder.sources_of(ext)
            origin = self.recorder.origin(ext)
            read_out = False
            if not made_from and origin is None:
                made_from, origin, array_at = self._read_out_from(ext)
                read_out, held_at = bool(made_from), held_at or array_at
            if not made_from and origin is None and self.earlier is not None:
                made = self.earlier.assignment_of(held_at)
                # a value made of literals or plain data alone (``x = tf.constant([1.0, 2.0])``)
                # holds a variable's values by chance, not as its copy
                by_values = self._copied_from(ext, handles) if made is None or not made.literal else None
                made_from = by_values or self._computed_from(made, handles)
                origin = made.source if made is not None and made_from else None
            self._link_copy(g, nid, ext.dtype.name, made_from, origin, held_at, handles, read_out)
        if self._read_outs:
            self._link_read_out_constants(g, handles)
        for f in self.found:
            if var_node(f) not in g:
                continue
            if id(f) in self.unwatched:
                why = self.unwatched[id(f)]
            elif not getattr(f.tf_variable, "watched", True):
                why = (
                    f"the tape never watches {f.path}: tape.watch({f.path}) is missing, and a"
                    " tape follows a tensor only once it is told to"
                )
            else:
                continue
            for _, _nid, e in g.out_edges(var_node(f), data=True):
                e.update(status=Kind.OUTSIDE_TAPE, status_fixed=True, message=why)
        region = union_region(g, [var_node(f) for f in self.found], og.target)
        self.region = region
        return region
