"""tfviz as a Python library: :func:`check` and the :class:`Report` it returns.

A path (a ``.py`` script or a ``.ipynb`` notebook) is analyzed in a worker process, exactly as
``tfviz check`` analyzes it. A function is analyzed here, on the caller's live objects (the
model a notebook has built): tfviz patches TensorFlow and Keras while it runs, and puts
back everything it touched when it is done, the values of every variable included (a
dropout's seed, a batch norm's moving averages), so that the caller's training afterwards
runs as if tfviz had never been called.

>>> import tfviz
>>> tfviz.check(42)
Traceback (most recent call last):
...
TypeError: tfviz.check takes a path to a script or notebook, or a function (one that ... got int
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import tfviz.report as report_module
from tfviz.errors import AnalysisError
from tfviz.exitstatus import ExitStatus


class Report(report_module.Report):
    """What ``tfviz check`` prints, as a value: ``ok``, ``variables``, ``problems`` (each with
    its ``source.file`` and ``source.line``), ``to_json()``; ``str()`` is the text report, and
    in a notebook it shows itself as a graph with its problems and variables."""

    @property
    def status(self) -> ExitStatus:
        """The exit status ``tfviz check`` would end with: OK (0) or PROBLEMS (1)."""
        return ExitStatus.OK if self.ok else ExitStatus.PROBLEMS

    def __str__(self) -> str:
        from tfviz.textreport import render

        return render(self)

    def _repr_html_(self) -> str:
        from tfviz.notebookview import report_html

        return report_html(self)


def check(
    target: str | os.PathLike[str] | Callable[..., Any],
    *,
    step: int = 1,
    until: str | Sequence[str] | None = None,
    max_steps: int | None = None,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    function: str | None = None,
    run: bool = False,
    allow_empty: bool = False,
) -> Report:
    """Analyze ``target`` and return its :class:`Report`.

    ``target`` is a path to a script or notebook, analyzed in a worker as ``tfviz check``
    does (``args`` are then the script's command-line arguments, ``function`` a target it
    defines, ``run``, ``step``, ``until`` and ``max_steps`` as the command's flags); or a
    function of this process: a training step, called once with ``args`` and ``kwargs`` and
    stopped at its update, before anything is applied; or, with neither, a function that
    takes no arguments and returns the loss.

    Raises :class:`~tfviz.errors.AnalysisError` with the message the command prints (file
    and line included) when the target cannot be analyzed, or has no trainable variable
    (unless ``allow_empty``); TypeError or ValueError for arguments that make no sense.
    """
    if isinstance(target, (str, os.PathLike)):
        return _check_path(os.fspath(target), step, until, max_steps, args, function, run, allow_empty)
    if not callable(target):
        raise TypeError(
            "tfviz.check takes a path to a script or notebook, or a function (one that returns"
            f" the loss, or a training step with its args); got {type(target).__name__}"
        )
    for name, value, default in (
        ("until", until, None),
        ("function", function, None),
        ("run", run, False),
        ("step", step, 1),
        ("max_steps", max_steps, None),
    ):
        if value != default:
            raise ValueError(
                f"tfviz.check({getattr(target, '__name__', 'fn')}, {name}=...): {name} is for a"
                " script or notebook; a function is checked at its first gradient step (a"
                " training step, called once with args and kwargs) or called once to return"
                " the loss (with neither)"
            )
    return _check_function(target, tuple(args) if args or kwargs else None, kwargs, allow_empty)


def load_analysis() -> None:
    """Import what a check of one of this process's functions runs (networkx and tfviz's
    analysis: 0.15 s of a session's first ResNet50 check), where it is known that the
    process will need them: ``import tfviz`` calls this where TensorFlow is imported already,
    a notebook's or a test's process, so that its first check pays only for its own work.
    The command line and the window never import TensorFlow in their own process, and start
    without them. The cycle collector is paused over the import: its hundreds of modules'
    objects, none of them garbage, set off a full collection over the whole heap, which
    TensorFlow's makes 0.2 s long."""
    with report_module.collector_paused():
        for name in ("tfviz.analysis.diagnose", "tfviz.program.written"):
            importlib.import_module(name)


def _check_path(
    path: str,
    step: int,
    until: str | Sequence[str] | None,
    max_steps: int | None,
    args: Sequence[Any],
    function: str | None,
    run: bool,
    allow_empty: bool,
) -> Report:
    from tfviz.commands.check import analysis_request
    from tfviz.script.loader import compile_script
    from tfviz.worker.client import WorkerClient
    from tfviz.worker.messages import Failure

    compile_script(path)  # a missing file or a syntax error: said before any worker starts
    request = analysis_request(
        path,
        target=function,
        run=run,
        args=[str(a) for a in args],
        step=step,
        allow_empty=allow_empty,
        until=until if isinstance(until, str) or until is None else ",".join(until),
        max_steps=max_steps,
    )
    chart = _live_chart() if until else None
    if chart is not None:
        request["live"] = True
    client = WorkerClient(
        on_steps=(lambda steps: chart.add(steps.points)) if chart is not None else None,
        on_log=_echo if chart is not None else None,
    )
    try:
        answer = client.run(request)
    finally:
        if chart is not None:
            chart.redraw()
    if isinstance(answer, Failure):
        raise AnalysisError.from_dict(answer.error, os.path.abspath(path))
    return Report.from_dict(answer.report or {})  # type: ignore[return-value]  # cls(...) is this class


def _live_chart() -> Any:
    """A chart that follows a watched run, where this runs in a notebook's kernel (None elsewhere)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    from tfviz.notebookview import LiveChart

    return LiveChart()


def _echo(log: Any) -> None:
    """The program's own output, as it comes, below the chart."""
    stream = sys.stderr if log.stream == "stderr" else sys.stdout
    stream.write(log.text)


def _check_function(
    fn: Callable[..., Any],
    args: tuple[Any, ...] | None,
    kwargs: dict[str, Any] | None,
    allow_empty: bool,
) -> Report:
    from tfviz.analysis.diagnose import analysis_of_function
    from tfviz.program import hooks
    from tfviz.report import collector_paused
    from tfviz.script.quiet import as_python_has_it_now
    from tfviz.script.sourcemap import running_user_source

    as_python_has_it_now()  # the function's own calls get the caller's warnings and log levels

    with contextlib.ExitStack() as stack:
        targets = {"stdout": _shown_at(sys.stdout, 1, stack), "stderr": _shown_at(sys.stderr, 2, stack)}

        def echo(stream: str, text: str) -> None:  # the function's prints still show where they would
            with contextlib.suppress(Exception):
                targets[stream](text)

        # A program that ``tfviz check`` runs may call tfviz.check itself: that check is the
        # program's own call, as under ``python``, and none of its gradient calls (the step's,
        # the analysis's) is a step of the program that the outer run counts or stops at.
        outer = hooks.current()
        if outer is not None and (where := running_user_source()) is not None:
            getattr(outer, "own_checks", []).append(where)
        # without the cycle collector's passes over the caller's whole heap (a notebook's
        # model and data), which the analysis's many small objects would set off again and
        # again: a fifth of a ResNet50 check's own time
        with untouched(), collector_paused(), hooks.handling(None):
            analysis = analysis_of_function(fn, args, kwargs, on_text=echo, allow_empty=allow_empty)
            made = analysis.report
            # The analysis (its copied ops, its networkx graph: 39,000 objects for ResNet50)
            # is let go before the collector resumes, its cycles undone so that it is freed
            # now: left to the collector, its next pass would walk it all first, and what of it
            # was still held would be moved to the old generations and walked by every
            # collection until a full one, over the caller's whole heap, freed it.
            analysis.release()
            del analysis
    return Report(**{f.name: getattr(made, f.name) for f in dataclasses.fields(made)})


def _shown_at(stream: Any, fd: int, stack: contextlib.ExitStack) -> Callable[[str], Any]:
    """Where the function's output is passed on: the caller's stream as it is (a notebook's),
    or, where that stream writes to file descriptor ``fd`` itself, a duplicate of ``fd`` taken
    now: the analysis points ``fd`` at its own pipe while the function runs, and writing to
    it would feed the pipe from its own reader."""
    try:
        own = stream.fileno() == fd
    except (AttributeError, OSError, ValueError):
        own = False
    if not own:
        return lambda text: stream.write(text)
    stream.flush()
    encoding = getattr(stream, "encoding", None) or "utf-8"
    copy = stack.enter_context(open(os.dup(fd), "w", encoding=encoding))  # noqa: SIM115 - the stack closes it

    def write(text: str) -> None:
        copy.write(text)
        copy.flush()

    return write


@contextlib.contextmanager
def untouched() -> Iterator[None]:
    """Whatever an in-process analysis changes, put back: the patches on TensorFlow and
    Keras, the value of every variable alive before it (saved as it is first written), the
    random generators (Python's, NumPy's, TensorFlow's op seeds), the working folder,
    ``sys.argv``, ``sys.path``, the environment, warning filters and the loggers' levels."""
    import logging
    import warnings

    import numpy as np

    saved_env = dict(os.environ)
    saved_filters = list(warnings.filters)
    loggers = {n: logging.getLogger(n).level for n in ("tensorflow", "absl", "h5py")}
    cwd, argv, path, main = os.getcwd(), list(sys.argv), list(sys.path), sys.modules.get("__main__")
    py_random, np_random = random.getstate(), np.random.get_state()
    from tfviz.engine import layerscopes
    from tfviz.program import hooks

    patched = hooks.mark(), layerscopes.mark()  # what was patched before (by tfviz, elsewhere) stays
    tf_state = _tensorflow_state()
    try:
        yield
    finally:
        hooks.uninstall(patched[0])
        layerscopes.uninstall(patched[1])
        _restore_tensorflow(tf_state)
        random.setstate(py_random)
        np.random.set_state(np_random)
        os.chdir(cwd)
        sys.argv[:] = argv
        sys.path[:] = path
        if main is not None:
            sys.modules["__main__"] = main
        for name, level in loggers.items():
            logging.getLogger(name).setLevel(level)
        warnings.filters[:] = saved_filters  # type: ignore[index]  # a list at run time
        for key in set(os.environ) - set(saved_env):
            del os.environ[key]
        os.environ.update(saved_env)


def _tensorflow_state() -> dict[str, Any]:
    """TensorFlow's state an analysis may move: the variables it writes (each saved before its
    first write, :mod:`tfviz.program.written`; or, with that switched off, every live one),
    the eager context's op-seed generator, and the log verbosities (empty where TensorFlow is
    not imported: then nothing of it was there to move)."""
    if "tensorflow" not in sys.modules:
        return {}
    from absl import logging as absl_logging
    from tensorflow.python.autograph.utils import ag_logging
    from tensorflow.python.eager import context

    from tfviz.program import written

    rng = getattr(context.context(), "_rng", None)
    saving = written.WrittenVariables() if written.SAVE_AS_WRITTEN else None
    if saving is not None:
        saving.__enter__()  # left in _restore_tensorflow, after every other patch is taken off
    return {
        "written": saving,
        "values": [] if saving is not None else written.every_live_variable(),
        "rng": (rng, rng.getstate()) if rng is not None else None,
        "absl": absl_logging.get_verbosity(),
        "autograph": ag_logging.verbosity_level,  # None: read from the environment, as it was
    }


def _restore_tensorflow(state: dict[str, Any]) -> None:
    if not state:
        return
    from absl import logging as absl_logging
    from tensorflow.python.autograph.utils import ag_logging

    from tfviz.program import written

    if state["written"] is not None:
        state["written"].__exit__(None, None, None)
        state["written"].restore()
    written.put_back(state["values"])
    if state["rng"] is not None:
        rng, rng_state = state["rng"]
        rng.setstate(rng_state)
    absl_logging.set_verbosity(state["absl"])
    ag_logging.verbosity_level = state["autograph"]
