"""``tfviz export SCRIPT -o OUT.{png,svg,pdf,json,dot,graphml}``: analyze as ``check`` does, then write.

The output format is the extension of ``-o`` (or ``--format``). Data formats are written
here (:mod:`tfviz.graphformats`). Images are drawn by the app's own scene builder, the one the
window uses, in a child process with Qt's offscreen platform (``python -m
app.graph.export.headless``): this library never imports Qt, and no display is needed. The
analysis crosses over as a saved-analysis JSON file. ``SCRIPT`` may itself be a saved
analysis (``.json``): it is drawn or converted without running anything.

Exit statuses (:class:`~tfviz.exitstatus.ExitStatus`) are ``check``'s: 0 every variable
gets a gradient, 1 problems found (the file is written all the same), 2 the script could
not be analyzed or the file could not be written, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING

from tfviz.commands.args import add_step_options, command_parser
from tfviz.commands.check import analyze
from tfviz.exitstatus import ExitStatus, interrupted

if TYPE_CHECKING:
    from tfviz.commands.args import Subparsers
    from tfviz.report import Report

EXPANSIONS = ("default", "all", "problems", "none")


def _scale(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        s = math.nan
    if not (s > 0 and math.isfinite(s)):
        raise argparse.ArgumentTypeError(f"must be a positive number (1 = one pixel per unit), not {text!r}")
    return s


def add_parser(sub: Subparsers) -> None:
    e = command_parser(
        sub,
        "export",
        summary="analyze a script and write the graph as an image (PNG, SVG, PDF)"
        " or data (JSON, DOT, GraphML)",
        usage="tfviz export SCRIPT -o OUT.{png,svg,pdf,json,dot,graphml} [options] [-- ARGS...]",
        description="Analyze a script as tfviz check does, then write its gradient graph: as an"
        " image drawn as the window draws it (with a title line and the legend, no display"
        " needed), or as data. JSON is a saved analysis the app opens (tfviz OUT.json); DOT"
        " opens in Graphviz, GraphML in Gephi or yEd. Exit status as for check.",
        notes="SCRIPT may be a saved analysis (.json): nothing is run then. Arguments after --"
        " go to the script.",
        examples=[
            ("tfviz export train.py -o graph.svg", "the graph as the window first shows it"),
            ("tfviz export train.py -o graph.png --expand problems", "open only groups with a problem"),
            ("tfviz export train.py -o analysis.json", "save the analysis; tfviz analysis.json opens it"),
            ("tfviz export analysis.json -o graph.dot", "convert a saved analysis, running nothing"),
        ],
    )
    e.add_argument(
        "script",
        help="the training script or notebook (or one that defines loss()), or a saved analysis (.json)",
    )
    e.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the file to write; its extension names the format",
    )
    e.add_argument(
        "--format",
        choices=("json", "dot", "graphml", "png", "svg", "pdf"),
        help="the format, when the extension does not say it",
    )
    e.add_argument(
        "--expand",
        choices=EXPANSIONS,
        default="default",
        help="images: which groups are open: default (as the window opens the graph),"
        " all, problems (only groups holding a problem), none (default: default)",
    )
    e.add_argument(
        "--scale",
        type=_scale,
        default=1.0,
        metavar="S",
        help="PNG: pixels per graph unit (default 1; at most 64 megapixels in all)",
    )
    add_step_options(e)
    e.add_argument(
        "--force",
        action="store_true",
        help="replace an existing file tfviz did not write (never the script itself)",
    )
    e.add_argument(
        "--allow-empty",
        action="store_true",
        help="export a script that has no trainable variables instead of exit 2",
    )
    e.set_defaults(json=False, list_targets=False)


def run(args: argparse.Namespace) -> ExitStatus:
    from tfviz.analysisfile import AnalysisFileError, load_analysis
    from tfviz.errors import AnalysisError
    from tfviz.graphformats import IMAGE_FORMATS, format_of, write
    from tfviz.outputs import check_output
    from tfviz.script.loader import compile_script

    saved = args.script.lower().endswith(".json")
    try:
        try:
            fmt = args.format or format_of(args.output)
        except ValueError as exc:
            raise AnalysisError(str(exc), file=args.output) from None
        if args.target and (args.run or args.script_args):
            raise AnalysisError(
                "--target calls a function; --run and script arguments are for"
                " running the program: use one or the other",
                file=args.script,
            )
        if saved and (args.target or args.run or args.script_args):
            raise AnalysisError(
                "a saved analysis is shown as it was saved: --target, --run and"
                " script arguments are for analyzing a script",
                file=args.script,
            )
        check_output(args.output, args.script, args.force)
        if not saved:
            compile_script(args.script)  # a missing file or a syntax error fails before any worker
    except AnalysisError as exc:
        print(f"tfviz: {exc}", file=sys.stderr)
        return ExitStatus.ERROR
    report: Report | None = None
    if not saved:
        analyzed = analyze(args)
        if isinstance(analyzed, ExitStatus):
            return analyzed
        report = analyzed
    try:
        if fmt in IMAGE_FORMATS:
            if report is None:  # a saved analysis: checked while it is drawn
                report, ok, done = draw_saved(args.script, args.output, fmt, args.expand, args.scale)
            else:
                ok, done = draw(report, args.output, fmt, args.expand, args.scale)
            if not ok:
                print(f"tfviz: {done}", file=sys.stderr)
                return ExitStatus.ERROR
        else:
            if report is None:
                report = load_analysis(args.script)
            write(report, args.output, fmt)
            counts = report.graph.counts()
            done = f"{counts['ops']} ops, {counts['edges']} edges"
    except AnalysisFileError as exc:
        print(f"tfviz: {exc}", file=sys.stderr)
        return ExitStatus.ERROR
    except OSError as exc:  # an OutputError says why in words; others are the system's
        print(f"tfviz: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return ExitStatus.ERROR
    except KeyboardInterrupt as exc:
        what, status = interrupted(exc)
        print(f"tfviz: interrupted ({what}); {args.output} was not written", file=sys.stderr)
        return status
    return _done(args.output, fmt, done, report)


def _done(output: str, fmt: str, done: str, report: Report) -> ExitStatus:
    """Say what was written and the verdict; the exit status."""
    from tfviz.textreport import shown_path

    verdict = "every variable gets a gradient" if report.ok else "gradient problems found"
    print(f"{shown_path(output)}: {fmt}, {done}; {verdict}")
    return ExitStatus.OK if report.ok else ExitStatus.PROBLEMS


def _move_into_place(image: str, output: str) -> None:
    """Copy the finished image onto ``output`` atomically (the scratch folder may be on
    another file system, so no plain rename)."""
    import shutil

    from tfviz.outputs import replacing

    with open(image, "rb") as src, replacing(output, binary=True) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)


def _renderer(analysis: str, image: str, fmt: str, expand: str, scale: float) -> list[str]:
    """The command line of the child that draws ``analysis`` into ``image``; tfviz checks
    the analysis itself (``--checked``)."""
    return [
        sys.executable,
        "-m",
        "tfviz_app.graph.export.headless",
        analysis,
        image,
        "--format",
        fmt,
        "--expand",
        expand,
        "--scale",
        repr(scale),
        "--checked",
    ]


def _renderer_environment() -> dict[str, str]:
    from tfviz.worker.launch import worker_environment

    # started as a worker is (the same tfviz on its path), drawing without a screen
    return dict(worker_environment(), QT_QPA_PLATFORM="offscreen")


def draw(
    report: Report, output: str, fmt: str, expand: str = "default", scale: float = 1.0
) -> tuple[bool, str]:
    """Draw ``report`` into ``output`` in a child process: (True, the renderer's one-line
    summary), or (False, why it failed). The child gets the analysis with every name made
    one XML can hold (:func:`~tfviz.outputs.xml_safe_json`): Qt writes an escape
    character or a NUL into the SVG as it is, which no XML reader then opens."""
    from tfviz.analysisfile import analysis_document
    from tfviz.outputs import xml_safe_json
    from tfviz.report import collector_paused

    # The renderer draws into this scratch folder, and the image is moved into place only
    # once it is complete: a renderer ended half-way (tfviz interrupted, SIGTERM) leaves
    # nothing, neither beside the output nor here.
    with tempfile.TemporaryDirectory(prefix="tfviz-export-") as tmp:
        path = os.path.join(tmp, "analysis.json")
        image = os.path.join(tmp, "image" + os.path.splitext(output)[1])
        try:  # a private scratch file, not an output: written plainly
            with open(path, "w", encoding="utf-8") as fh:
                with collector_paused():
                    fh.write(xml_safe_json(analysis_document(report)))
        except OSError as exc:
            return False, f"cannot write a temporary file: {exc.strerror or exc}"
        cmd = _renderer(path, image, fmt, expand, scale)
        try:
            # subprocess.run kills the renderer when tfviz is interrupted (SIGTERM is one).
            done = subprocess.run(
                cmd, env=_renderer_environment(), capture_output=True, text=True, stdin=subprocess.DEVNULL
            )
        except OSError as exc:
            return False, f"cannot start the image renderer: {exc.strerror or exc}"
        return _outcome(done.returncode, done.stdout, done.stderr, image, output)


def draw_saved(path: str, output: str, fmt: str, expand: str, scale: float) -> tuple[Report, bool, str]:
    """Check the saved analysis ``path`` and draw it into ``output``: (the checked report,
    then as :func:`draw`). Raises :class:`~tfviz.analysisfile.AnalysisFileError` for a file
    that is not a valid analysis, and nothing is written.

    The check and the drawing each take half the time, so they run at once: the renderer
    draws the file as it reads it, unchecked, while this process checks it, and the image
    is kept only once the check has passed (a 100 MB analysis to SVG: 18 s one after the
    other). Where the renderer cannot draw what it read (a valid file with fields this
    tfviz ignores), the checked report is drawn as :func:`draw` does.
    """
    from tfviz.analysisfile import load_analysis

    with (
        tempfile.TemporaryDirectory(prefix="tfviz-export-") as tmp,
        tempfile.TemporaryFile("w+", encoding="utf-8") as out,
        tempfile.TemporaryFile("w+", encoding="utf-8") as err,
    ):
        image = os.path.join(tmp, "image" + os.path.splitext(output)[1])
        try:  # its output to files: a pipe could fill while this process checks
            child: subprocess.Popen[str] | None = subprocess.Popen(
                _renderer(path, image, fmt, expand, scale),
                env=_renderer_environment(),
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                text=True,
            )
        except OSError:
            child = None  # said by draw() below, which starts it again
        try:
            report = load_analysis(path)
            status = child.wait() if child is not None else None
        finally:
            if child is not None and child.poll() is None:
                child.kill()  # the file is not valid, or tfviz is interrupted
                child.wait()
        out.seek(0)
        err.seek(0)
        said, complaint = out.read(), err.read()
        refused = status == ExitStatus.ERROR and complaint.rstrip().rpartition("\n")[2].startswith("tfviz: ")
        if status is not None and (status == 0 or refused):  # drawn, or refused for its own reason
            ok, done = _outcome(status, said, complaint, image, output)
            return report, ok, done
    return report, *draw(report, output, fmt, expand, scale)


def _outcome(status: int, stdout: str, stderr: str, image: str, output: str) -> tuple[bool, str]:
    """What the renderer's exit ``status`` and output say, with ``image`` moved onto
    ``output`` when it drew it."""
    stdout, stderr = stdout.replace(image, output), stderr.replace(image, output)
    if status == 0:
        try:
            _move_into_place(image, output)
        except OSError as exc:
            return False, f"cannot write {output}: {exc.strerror or exc}"
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if status == 0:
        return True, stdout.strip().splitlines()[-1] if stdout.strip() else "drawn"
    if lines and lines[-1].startswith("tfviz: "):
        return False, lines[-1].removeprefix("tfviz: ")
    if any("No module named 'app" in ln or "No module named 'PySide6" in ln for ln in lines):
        return False, "image export needs tfviz's app (PySide6), which cannot be imported here"
    if status < 0:
        return False, f"the image renderer crashed (signal {-status}); {output} was not written"
    why = lines[-1] if lines else f"exit status {status}"
    return False, f"the image renderer failed ({why}); {output} was not written"
