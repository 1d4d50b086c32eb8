"""``tfviz``: the command line. TensorFlow is imported only when a command needs it."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from tfviz import __version__

if TYPE_CHECKING:
    from tfviz.report import Report

EXIT_OK, EXIT_PROBLEMS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tfviz",
        description="See why a TensorFlow model's gradients don't flow.",
        epilog="With no command, opens the desktop app (tfviz SCRIPT opens a script in it).",
    )
    p.add_argument("--version", action="version", version=f"tfviz {__version__}")
    sub = p.add_subparsers(dest="command")
    c = sub.add_parser("check", help="diagnose a script's gradients in the terminal (CI-friendly)",
                       usage="tfviz check SCRIPT [options] [-- ARGS...]",
                       epilog="Arguments after -- go to the script: tfviz check train.py -- --epochs 3")
    c.add_argument("script", help="the training script (or a script that defines loss())")
    c.add_argument("--target", help="a zero-argument function to differentiate instead of running"
                   " the program (default: loss, when the script defines it)")
    c.add_argument("--run", action="store_true",
                   help="run the script as a program even if it defines loss()")
    c.add_argument("--step", type=_positive, default=1, metavar="N",
                   help="diagnose the program's N-th gradient computation (default: 1)")
    c.add_argument("--json", action="store_true", help="print one JSON document")
    c.add_argument("--list-targets", action="store_true", help="list candidate targets and exit")
    c.add_argument("--graph", metavar="FILE", help="also write the full graph document (JSON)")
    c.add_argument("--force", action="store_true",
                   help="let --graph replace an existing file tfviz did not write")
    c.add_argument("--allow-empty", action="store_true",
                   help="pass a script that has no trainable variables (exit 0) instead of exit 2")
    from tfviz.jacobian.cli import add_parser as add_jacobian

    add_jacobian(sub)
    from tfviz.exportcli import add_parser as add_export

    add_export(sub, _positive)
    o = sub.add_parser("open", help="open a script in the desktop app")
    o.add_argument("script", nargs="?")
    o.add_argument("--target")
    o.add_argument("--run", action="store_true")
    o.add_argument("--step", type=_positive, default=1, metavar="N")
    return p


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return n


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line; a bare script path means ``open SCRIPT``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in argv:  # everything after it belongs to the user's program
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1:]
    if argv and argv[0] not in ("check", "open", "jacobian", "export") and not argv[0].startswith("-"):
        argv.insert(0, "open")
    args = _parser().parse_args(argv)
    args.script_args = script_args
    return args


def main(argv: list[str] | None = None) -> int:
    """The headless commands. Opening the app is ``app.launch``'s job, since
    the library never imports the GUI."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # `tfviz check ... | head`: the reader left; say nothing more, keep the exit code sane.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_ERROR


def _interrupt_on_termination() -> None:
    """SIGTERM and SIGHUP end a command as Ctrl-C does, so its worker and
    everything the user's program started are ended too, never left to init."""
    import signal

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)


def _main(argv: list[str] | None) -> int:
    args = parse_args(argv)
    _interrupt_on_termination()
    if args.command == "check":
        return _check(args)
    if args.command == "jacobian":
        from tfviz.jacobian.cli import run

        return run(args)
    if args.command == "export":
        from tfviz.exportcli import run as run_export

        return run_export(args)
    print("tfviz: the desktop app starts from the `tfviz` command", file=sys.stderr)
    return EXIT_ERROR


def _check(args: argparse.Namespace) -> int:
    from tfviz.errors import AnalysisError
    from tfviz.script.loader import compile_script

    try:
        if args.target and (args.run or args.script_args):
            raise AnalysisError("--target calls a function; --run and script arguments are for"
                                " running the program: use one or the other", file=args.script)
        if args.graph:
            refuse_graph_path(args.graph, args.script, args.force)
        compile_script(args.script)  # a missing file or a syntax error fails before any worker
        if args.list_targets:
            return _list_targets(args)
    except AnalysisError as exc:
        return _fail(args, exc.to_dict())
    report = analyse(args)
    if isinstance(report, int):
        return report
    if args.json:
        print(report.to_json(full_graph=False, indent=2))
    else:
        from tfviz.textreport import render

        print(render(report, color=sys.stdout.isatty() and not os.environ.get("NO_COLOR")))
    sys.stdout.flush()
    if args.graph:
        _write_graph(args.graph, report)
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def analyse(args: argparse.Namespace) -> Report | int:
    """Run the analysis ``args`` asks for in a worker: the :class:`Report`, or the exit
    code when there is none (the error already said on stderr, and on stdout with --json)."""
    live = sys.stderr.isatty()
    request = {"cmd": "analyze", "script": os.path.abspath(args.script), "target": args.target,
               "run": args.run, "args": args.script_args, "step": args.step,
               "allow_empty": args.allow_empty}
    from tfviz.client import WorkerRun

    worker = WorkerRun(on_progress=_progress_printer(live), on_log=_pass_through if live else None)
    try:
        answer = worker.run(request)
    except KeyboardInterrupt:
        worker.kill()
        print("tfviz: interrupted (Ctrl-C); nothing was diagnosed", file=sys.stderr)
        return EXIT_INTERRUPTED
    if answer.get("type") != "result":
        error = dict(answer.get("error") or {})
        if not error.get("file") and not error.get("line"):
            error["file"] = os.path.abspath(args.script)
        return _fail(args, error)
    from tfviz.report import Report
    return Report.from_dict(answer["report"])


def _fail(args: argparse.Namespace, error: dict) -> int:
    from tfviz.errors import AnalysisError

    exc = AnalysisError(**{k: v for k, v in error.items() if k in (
        "message", "file", "line", "code", "detail")}, candidates=tuple(error.get("candidates") or ()))
    if args.json:
        print(json.dumps({"tfviz": __version__, "ok": False, "error": exc.to_dict()}))
    print(f"tfviz: {exc}", file=sys.stderr)
    return EXIT_ERROR


def refuse_graph_path(path: str, script: str, force: bool, flag: str = "--graph") -> None:
    """``--graph`` (and ``export -o``) never overwrites the script, nor a file tfviz did not write."""
    from tfviz.errors import AnalysisError

    if not os.path.isfile(path):
        return  # a folder or a missing path fails when written: one line, after the report
    if os.path.exists(script) and os.path.samefile(path, script):
        raise AnalysisError(f"{flag} names the script being analysed; refusing to overwrite it",
                            file=path)
    from tfviz.outputs import written_by_tfviz

    if not force and not written_by_tfviz(path):
        raise AnalysisError(f"{flag} would overwrite {path}, which is not a file tfviz wrote;"
                            " use --force to replace it", file=path)


def _write_graph(path: str, report) -> None:
    """Written after the report, so a bad path never hides it; failing to
    write is one line on stderr and leaves the exit code to the analysis."""
    try:
        from tfviz.analysisfile import analysis_json
        from tfviz.outputs import replacing

        with replacing(path) as fh:  # complete or not at all; never over a FIFO or a device
            fh.write(analysis_json(report))
    except OSError as exc:
        print(f"tfviz: cannot write --graph {path}: {exc.strerror}", file=sys.stderr)


def _list_targets(args: argparse.Namespace) -> int:
    """Named targets, read from the source: listing them never runs the program."""
    from tfviz.script.loader import read_source
    from tfviz.script.scriptinfo import static_targets

    names = static_targets(read_source(args.script))
    if args.json:
        print(json.dumps({"tfviz": __version__, "ok": True, "targets": names}))
    else:
        for name in names:
            print(name)
    return EXIT_OK


def _pass_through(stream: str, text: str) -> None:
    """The program's own output, live on stderr (stdout stays the report's)."""
    sys.stderr.write(text)
    sys.stderr.flush()


def _progress_printer(live: bool):
    """Stages on stderr while the program runs, when stderr is a terminal."""
    if not live:
        return None

    def show(stage: str, fraction: float) -> None:
        print(f"tfviz: {stage}…", file=sys.stderr, flush=True)

    return show


if __name__ == "__main__":
    sys.exit(main())
