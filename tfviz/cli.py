"""``tfviz``: the command line. TensorFlow is imported only when a command needs it."""

from __future__ import annotations

import argparse
import json
import os
import sys

from tfviz import __version__

EXIT_OK, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2


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
    if argv and argv[0] not in ("check", "open") and not argv[0].startswith("-"):
        argv.insert(0, "open")
    args = _parser().parse_args(argv)
    args.script_args = script_args
    return args


def main(argv: list[str] | None = None) -> int:
    """The headless commands. Opening the app is ``app.launch``'s job, since
    the library never imports the GUI."""
    args = parse_args(argv)
    if args.command == "check":
        return _check(args)
    print("tfviz: the desktop app starts from the `tfviz` command", file=sys.stderr)
    return EXIT_ERROR


def _check(args: argparse.Namespace) -> int:
    from tfviz.errors import AnalysisError

    try:
        if args.list_targets:
            return _list_targets(args.script)
        from tfviz.diagnose import analyze

        if args.target and (args.run or args.script_args):
            raise AnalysisError("--target calls a function; --run and script arguments are for"
                                " running the program: use one or the other", file=args.script)
        live = sys.stderr.isatty()
        report = analyze(args.script, args.target, progress=_progress_printer(live),
                         on_text=_pass_through if live else None,
                         run=args.run, args=args.script_args, step=args.step)
    except AnalysisError as exc:
        if args.json:
            print(json.dumps({"tfviz": __version__, "ok": False, "error": exc.to_dict()}))
        print(f"tfviz: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("tfviz: interrupted (Ctrl-C); nothing was diagnosed", file=sys.stderr)
        return EXIT_ERROR
    if args.graph:
        with open(args.graph, "w", encoding="utf-8") as fh:
            fh.write(report.to_json(full_graph=True))
    if args.json:
        print(report.to_json(full_graph=False, indent=2))
    else:
        from tfviz.textreport import render

        print(render(report, color=sys.stdout.isatty() and not os.environ.get("NO_COLOR")))
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def _list_targets(path: str) -> int:
    """Named targets, read from the source: listing them never runs the program."""
    from tfviz.loader import compile_script, read_source
    from tfviz.scriptinfo import static_targets

    compile_script(path)
    for name in static_targets(read_source(path)):
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
