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
    c = sub.add_parser("check", help="diagnose a script's gradients in the terminal (CI-friendly)")
    c.add_argument("script", help="the Python script that defines the target")
    c.add_argument("--target", help="the zero-argument function to differentiate (default: loss)")
    c.add_argument("--json", action="store_true", help="print one JSON document")
    c.add_argument("--list-targets", action="store_true", help="list candidate targets and exit")
    c.add_argument("--graph", metavar="FILE", help="also write the full graph document (JSON)")
    o = sub.add_parser("open", help="open a script in the desktop app")
    o.add_argument("script", nargs="?")
    o.add_argument("--target")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line; a bare script path means ``open SCRIPT``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in ("check", "open") and not argv[0].startswith("-"):
        argv.insert(0, "open")
    return _parser().parse_args(argv)


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

        report = analyze(args.script, args.target)
    except AnalysisError as exc:
        if args.json:
            print(json.dumps({"tfviz": __version__, "ok": False, "error": exc.to_dict()}))
        print(f"tfviz: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("tfviz: interrupted", file=sys.stderr)
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
    from tfviz.discover import find_targets
    from tfviz.loader import load_script
    from tfviz.quiet import import_tensorflow

    import_tensorflow()
    script = os.path.abspath(path)
    cwd = os.getcwd()
    os.chdir(os.path.dirname(script))
    try:
        loaded = load_script(script)
    finally:
        os.chdir(cwd)
    for name in sorted(find_targets(loaded.module)):
        print(name)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
