"""``tfviz check SCRIPT [options] [-- ARGS...]``: diagnose a script's gradients in the terminal.

Exit status (:class:`~tfviz.exitstatus.ExitStatus`): 0 every variable gets a gradient,
1 gradient problems found, 2 the script could not be analyzed (or has no trainable
variables, unless ``--allow-empty``), 130 Ctrl-C. ``--graph`` failing to write is one
line on stderr and leaves the exit status to the analysis.

:func:`analyze` is ``export``'s too: it runs the analysis in a worker, as ``check`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tfviz.commands.args import add_color_option, add_step_options, command_parser, positive, use_color
from tfviz.exitstatus import ExitStatus, interrupted
from tfviz.reportformats import FORMATS
from tfviz.version import __version__
from tfviz.worker.messages import Failure, JacobianProgress, Log, Progress

if TYPE_CHECKING:
    from tfviz.commands.args import Subparsers
    from tfviz.errors import AnalysisError
    from tfviz.report import Report


def add_parser(sub: Subparsers) -> None:
    c = command_parser(
        sub,
        "check",
        summary="diagnose a script's gradients in the terminal (CI-friendly)",
        usage="tfviz check SCRIPT [options] [-- ARGS...]",
        description="Run a training script or notebook to its first gradient step (or call its"
        " loss()), and say which trainable variables get no gradient, where the chain is cut"
        " and why, at the line of the script. Exit status: 0 every variable gets a gradient,"
        " 1 problems found, 2 the script could not be analyzed, 130 Ctrl-C.",
        notes="Arguments after -- go to the script.",
        examples=[
            ("tfviz check train.py", "diagnose the first gradient step of train.py"),
            ("tfviz check train.py --step 3 -- --epochs 3", "the third step, with the script's arguments"),
            ("tfviz check model.py --target loss", "differentiate loss() instead of running the program"),
            ("tfviz check train.py --until nan --record norms.csv", "watch training until a NaN gradient"),
            ("tfviz check train.py --format github", "CI: annotations on the lines of the problems"),
            ("tfviz check train.py --format sarif > tfviz.sarif", "for GitHub code scanning"),
        ],
    )
    c.add_argument("script", help="the training script or Jupyter notebook (or one that defines loss())")
    add_step_options(c)
    c.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="what to print: the text report, one JSON document, the text report then GitHub"
        " Actions annotations (::error file=F,line=N::...), or a SARIF 2.1.0 log for code"
        " scanning (default: text)",
    )
    c.add_argument("--json", action="store_true", help="the same as --format json")
    add_color_option(c)
    c.add_argument("--list-targets", action="store_true", help="list candidate targets and exit")
    c.add_argument("--graph", metavar="FILE", help="also write the full graph document (JSON)")
    c.add_argument(
        "--force", action="store_true", help="let --graph replace an existing file tfviz did not write"
    )
    c.add_argument(
        "--allow-empty",
        action="store_true",
        help="pass a script that has no trainable variables (exit 0) instead of exit 2",
    )
    w = c.add_argument_group("watching training (program mode)")
    w.add_argument(
        "--until",
        metavar="COND",
        help="run the program step after step and diagnose the first step where COND holds:"
        " nan, none, zero, vanishing, exploding, or several joined by commas (all: every one)",
    )
    w.add_argument(
        "--max-steps",
        type=positive,
        metavar="N",
        help="with --until: stop after N gradient steps and diagnose the last one",
    )
    w.add_argument(
        "--zero-steps",
        type=positive,
        default=None,
        metavar="K",
        help="with --until zero: how many steps in a row a gradient must be exactly zero (default: 5)",
    )
    w.add_argument(
        "--record",
        metavar="FILE.csv",
        help="with --until: write each step's gradient and weight norm per variable"
        " (FILE.parquet: as Parquet, with pyarrow; DIR/: TensorBoard event files, per layer"
        " norms and update/weight ratios and gradient histograms, with tfviz[tensorboard])",
    )


def run(args: argparse.Namespace) -> ExitStatus:
    from tfviz.errors import AnalysisError
    from tfviz.program.cluster import own_record
    from tfviz.script.loader import compile_script

    if args.json:
        args.format = "json"
    args.json = args.format == "json"
    try:
        if args.target and (args.run or args.script_args):
            raise AnalysisError(
                "--target calls a function; --run and script arguments are for"
                " running the program: use one or the other",
                file=args.script,
            )
        if getattr(args, "record", None):  # each worker of a cluster job writes its own
            args.record = own_record(args.record, os.environ)
        _check_watch_options(args)
        if args.graph:
            refuse_graph_path(args.graph, args.script, args.force)
        compile_script(args.script)  # a missing file or a syntax error fails before any worker
        if args.list_targets:
            return _list_targets(args)
    except AnalysisError as exc:
        return _fail(args, exc)
    done = _analyzed(args, _printing(args))
    if done.printed is not None:  # printed by the worker, the --graph file written there
        print(done.printed)
        sys.stdout.flush()
        _say_unwritten(args.graph, done.graph_error)
    return done.status


def _printing(args: argparse.Namespace) -> dict[str, Any]:
    """The worker's ``printed`` request: the format, colour, the folder paths are printed
    relative to (None where it is gone, removed under the shell) and the ``--graph`` file."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    graph = args.graph
    if graph and cwd is not None:
        graph = os.path.abspath(graph)
    return {
        "format": args.format,
        "color": use_color(args.color, sys.stdout, os.environ),
        "cwd": cwd,
        "graph": graph or None,
    }


def _check_watch_options(args: argparse.Namespace) -> None:
    """``--until`` and its companions make sense together only."""
    from tfviz.errors import AnalysisError
    from tfviz.program.tensorboard import missing as tensorboard_missing
    from tfviz.program.tensorboard import wants_tensorboard
    from tfviz.program.watch import parquet_missing, parse_until, wants_parquet

    until = getattr(args, "until", None)
    if until is None:
        extra = [
            f
            for f, v in (
                ("--max-steps", getattr(args, "max_steps", None)),
                ("--zero-steps", getattr(args, "zero_steps", None)),
                ("--record", getattr(args, "record", None)),
            )
            if v is not None
        ]
        if extra:
            raise AnalysisError(
                f"{extra[0]} goes with --until (watch the program until a condition holds)", file=args.script
            )
        return
    try:
        parse_until(until)
    except ValueError as exc:
        raise AnalysisError(f"--until: {exc}", file=args.script) from None
    if args.target:
        raise AnalysisError(
            "--until watches a program as it trains; --target calls one function once: use one or the other",
            file=args.script,
        )
    if args.step != 1:
        raise AnalysisError(
            "--step chooses the step; --until finds it: use --max-steps to bound the run", file=args.script
        )
    if args.record is not None and wants_tensorboard(args.record):
        if why := tensorboard_missing():
            raise AnalysisError(f"--record {args.record}: {why}", file=args.script)
        if os.path.exists(args.record) and not os.path.isdir(args.record):
            raise AnalysisError(f"--record {args.record}: it is not a folder", file=args.script)
        parent = os.path.dirname(os.path.abspath(args.record.rstrip(os.sep)))
        if not os.path.isdir(parent):
            raise AnalysisError(
                f"--record {args.record}: the folder {parent} does not exist", file=args.script
            )
    elif args.record is not None:
        refuse_graph_path(args.record, args.script, args.force, flag="--record")
        if wants_parquet(args.record) and (missing := parquet_missing()):
            raise AnalysisError(f"--record {args.record}: {missing}", file=args.script)


def analyze(args: argparse.Namespace) -> Report | ExitStatus:
    """Run the analysis ``args`` asks for in a worker: the :class:`Report`, or the exit
    status when there is none (the error already said on stderr, and on stdout with --json)."""
    done = _analyzed(args)
    if done.data is None:
        return done.status
    from tfviz.report import Report

    return Report.from_dict(done.data)


@dataclass(frozen=True)
class Analyzed:
    """How a worker's analysis ended, as the command acts on it."""

    #: the exit status: the report's verdict, the error's, or what a cluster job agreed on
    status: ExitStatus
    #: the report as the worker printed it (asked with ``printing``); None otherwise
    printed: str | None = None
    #: the report's plain data (the graph's counts only, where it was printed); None on an error
    data: dict[str, Any] | None = None
    #: why the ``--graph`` file could not be written
    graph_error: str | None = None


def _analyzed(args: argparse.Namespace, printing: dict[str, Any] | None = None) -> Analyzed:
    """Run the analysis in a worker. With ``printing`` (the worker's ``printed`` request) the
    worker prints the report and writes ``--graph``; without, the report comes back whole.
    An error is said here (stderr, and stdout in the format asked for)."""
    live = sys.stderr.isatty()
    request = analysis_request(
        args.script,
        target=args.target,
        run=args.run,
        args=args.script_args,
        step=args.step,
        allow_empty=args.allow_empty,
        until=getattr(args, "until", None),
        max_steps=getattr(args, "max_steps", None),
        zero_steps=getattr(args, "zero_steps", None),
    )
    from tfviz.program.tensorboard import wants_tensorboard

    if getattr(args, "until", None) and args.record and wants_tensorboard(args.record):
        request["tensorboard"] = os.path.abspath(args.record)  # event files, written as they come
    elif getattr(args, "until", None):
        if args.record:
            from tfviz.errors import AnalysisError
            from tfviz.program.watch import record_temporary

            request["record"] = os.path.abspath(args.record)
            # made now, before the program starts: a missing folder, a FIFO or a folder that
            # cannot be written fails here, not at the first recorded step
            try:
                request["record_tmp"] = record_temporary(args.record)
            except OSError as exc:
                missing = isinstance(exc, FileNotFoundError)
                why = "its folder does not exist" if missing else (exc.strerror or str(exc))
                return Analyzed(_fail(args, AnalysisError(f"--record {args.record}: cannot write it: {why}")))
    if printing is not None:
        request["printed"] = printing
    from tfviz.worker.client import WorkerClient

    worker = WorkerClient(on_progress=_progress_printer(live), on_log=_pass_through if live else None)
    try:
        answer = worker.run(request)
    except KeyboardInterrupt as exc:
        worker.kill()
        what, status = interrupted(exc)
        print(f"tfviz: interrupted ({what}); nothing was diagnosed", file=sys.stderr)
        _keep_record(request.get("record"), request.get("record_tmp"))
        return Analyzed(status)
    finally:
        _drop_unused(request.get("record_tmp"))
    if isinstance(answer, Failure):
        from tfviz.errors import AnalysisError

        return Analyzed(_fail(args, AnalysisError.from_dict(answer.error, os.path.abspath(args.script))))
    data = answer.report or {}
    if answer.status is not None:  # what the workers of a cluster job agreed on
        status = ExitStatus(answer.status)
    else:
        status = ExitStatus.OK if data.get("ok") is True else ExitStatus.PROBLEMS
    return Analyzed(status, answer.printed, data, answer.graph_error)


def analysis_request(
    script: str,
    *,
    target: str | None = None,
    run: bool = False,
    args: list[str] | tuple[str, ...] = (),
    step: int = 1,
    allow_empty: bool = False,
    until: str | None = None,
    max_steps: int | None = None,
    zero_steps: int | None = None,
) -> dict[str, Any]:
    """The worker's ``analyze`` request for what ``tfviz check`` (or :func:`tfviz.check`) asks:
    ``until`` as the command line writes it (``nan,zero``); ValueError for a condition it does
    not know."""
    request: dict[str, Any] = {
        "cmd": "analyze",
        "script": os.path.abspath(script),
        "target": target,
        "run": run,
        "args": list(args),
        "step": step,
        "allow_empty": allow_empty,
    }
    if until:
        from tfviz.program.watch import parse_until

        request["until"] = parse_until(until)
        request["step"] = max_steps or _UNBOUNDED
        if zero_steps is not None:
            request["zero_steps"] = zero_steps
    return request


def _drop_unused(tmp: Any) -> None:
    """The record's temporary, where the run wrote nothing to it (or it is in place already)."""
    if isinstance(tmp, str) and os.path.isfile(tmp) and not os.path.islink(tmp) and os.path.getsize(tmp) == 0:
        os.remove(tmp)


def _keep_record(record: Any, tmp: Any) -> None:
    """Ctrl-C ends the worker mid-run: the steps it recorded are kept, not left in a temporary file."""
    if not isinstance(record, str) or not isinstance(tmp, str):
        return
    from tfviz.program.watch import finish_record

    try:
        if finish_record(record, tmp):
            print(f"tfviz: the record of the steps watched so far is in {record}", file=sys.stderr)
    except OSError as exc:
        print(f"tfviz: cannot write the record {record}: {exc.strerror or exc}", file=sys.stderr)


#: ``--until`` without ``--max-steps``: run until the program ends
_UNBOUNDED = 2**62


def _fail(args: argparse.Namespace, exc: AnalysisError) -> ExitStatus:
    """Say why on stderr (and on stdout in the format asked for); exit 2."""
    from tfviz.reportformats import failure

    shown = failure(exc.to_dict(), getattr(args, "format", "json" if args.json else "text"))
    if shown is not None:
        print(shown)
    print(f"tfviz: {exc}", file=sys.stderr)
    return ExitStatus.ERROR


def refuse_graph_path(path: str, script: str, force: bool, flag: str = "--graph") -> None:
    """``--graph`` (and ``export -o``) never overwrites the script, nor a file tfviz did not write."""
    from tfviz.errors import AnalysisError

    if not os.path.isfile(path):
        return  # a folder or a missing path fails when written: one line, after the report
    if os.path.exists(script) and os.path.samefile(path, script):
        raise AnalysisError(f"{flag} names the script being analyzed; refusing to overwrite it", file=path)
    from tfviz.outputs import written_by_tfviz

    if not force and not written_by_tfviz(path):
        raise AnalysisError(
            f"{flag} would overwrite {path}, which is not a file tfviz wrote; use --force to replace it",
            file=path,
        )


def _say_unwritten(path: str, why: str | None) -> None:
    """A ``--graph`` file that could not be written is one line on stderr; the exit code
    stays the analysis's."""
    if why is not None:
        print(f"tfviz: cannot write --graph {path}: {why}", file=sys.stderr)


def _list_targets(args: argparse.Namespace) -> ExitStatus:
    """Named targets, read from the source: listing them never runs the program."""
    from tfviz.script.loader import read_source
    from tfviz.script.scriptinfo import static_targets

    names = static_targets(read_source(args.script))
    if args.json:
        from tfviz.reportformats import CHECK_SCHEMA_VERSION

        doc = {"schema_version": CHECK_SCHEMA_VERSION, "tfviz": __version__, "ok": True, "targets": names}
        print(json.dumps(doc))
    else:
        for name in names:
            print(name)
    return ExitStatus.OK


def _pass_through(log: Log) -> None:
    """The program's own output, live on stderr (stdout stays the report's)."""
    sys.stderr.write(log.text)
    sys.stderr.flush()


def _progress_printer(live: bool) -> Callable[[Progress | JacobianProgress], None] | None:
    """Stages on stderr while the program runs, when stderr is a terminal."""
    if not live:
        return None

    def show(p: Progress | JacobianProgress) -> None:
        if isinstance(p, Progress):
            print(f"tfviz: {p.stage}…", file=sys.stderr, flush=True)

    return show
