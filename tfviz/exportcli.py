"""``tfviz export SCRIPT -o OUT.{json,dot,graphml}``: analyse in a worker, as ``check`` does, then write.

The output format is the extension of ``-o`` (or ``--format``). Image formats are drawn
by the app's scene; until that renderer is wired in, they are refused with exit 2 before
anything runs. Exit codes are ``check``'s: 0 every variable gets a gradient, 1 problems
found, 2 the script could not be analysed or the file could not be written, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable


def add_parser(sub, positive: Callable[[str], int]) -> None:
    e = sub.add_parser(
        "export", help="analyse a script and write the graph as JSON, DOT or GraphML",
        usage="tfviz export SCRIPT -o OUT.{json,dot,graphml} [options] [-- ARGS...]",
        epilog="JSON is a saved analysis the app opens (tfviz OUT.json); DOT opens in Graphviz,"
               " GraphML in Gephi or yEd. Arguments after -- go to the script.")
    e.add_argument("script", help="the training script (or a script that defines loss())")
    e.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the file to write; its extension names the format")
    e.add_argument("--format", choices=("json", "dot", "graphml", "png", "svg", "pdf"),
                   help="the format, when the extension does not say it")
    e.add_argument("--target", help="a zero-argument function to differentiate instead of running"
                   " the program (default: loss, when the script defines it)")
    e.add_argument("--run", action="store_true",
                   help="run the script as a program even if it defines loss()")
    e.add_argument("--step", type=positive, default=1, metavar="N",
                   help="diagnose the program's N-th gradient computation (default: 1)")
    e.add_argument("--force", action="store_true",
                   help="replace an existing file tfviz did not write (never the script itself)")
    e.add_argument("--allow-empty", action="store_true",
                   help="export a script that has no trainable variables instead of exit 2")
    e.set_defaults(json=False, list_targets=False)


def run(args: argparse.Namespace) -> int:
    from tfviz import cli
    from tfviz.errors import AnalysisError
    from tfviz.export import IMAGE_FORMATS, format_of, write
    from tfviz.loader import compile_script

    try:
        try:
            fmt = args.format or format_of(args.output)
        except ValueError as exc:
            raise AnalysisError(str(exc), file=args.output) from None
        if fmt in IMAGE_FORMATS:
            raise AnalysisError(f"image export ({fmt}) is not available yet; use .json, .dot or .graphml",
                                file=args.output)
        if args.target and (args.run or args.script_args):
            raise AnalysisError("--target calls a function; --run and script arguments are for"
                                " running the program: use one or the other", file=args.script)
        cli.refuse_graph_path(args.output, args.script, args.force, flag="-o")
        compile_script(args.script)  # a missing file or a syntax error fails before any worker
    except AnalysisError as exc:
        print(f"tfviz: {exc}", file=sys.stderr)
        return cli.EXIT_ERROR
    report = cli.analyse(args)
    if isinstance(report, int):
        return report
    try:
        write(report, args.output, fmt)
    except OSError as exc:
        print(f"tfviz: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return cli.EXIT_ERROR
    verdict = "every variable gets a gradient" if report.ok else "gradient problems found"
    counts = report.graph.counts()
    print(f"{os.path.relpath(args.output)}: {fmt}, {counts['ops']} ops, {counts['edges']} edges;"
          f" {verdict}")
    return cli.EXIT_OK if report.ok else cli.EXIT_PROBLEMS
