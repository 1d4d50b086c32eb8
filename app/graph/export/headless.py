"""Draw a saved analysis as an image without a screen: ``python -m tfviz_app.graph.export.headless``.

``tfviz export SCRIPT -o graph.svg`` runs this in a child process (the library never
imports Qt): the analysis is read back with :func:`tfviz.analysisfile.load_analysis`
(never executed, never unpickled), built by the window's own :class:`GraphScene` in the
chosen collapse state, and written by :func:`app.graph.export.image.write_image`, with Qt's
offscreen platform. Every failure is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from tfviz.exitstatus import ExitStatus

if TYPE_CHECKING:
    from tfviz.report import Report


def _parser() -> argparse.ArgumentParser:
    from ..scene import EXPANSIONS

    p = argparse.ArgumentParser(
        prog="python -m tfviz_app.graph.export.headless",
        description="Draw a saved tfviz analysis as PNG, SVG or PDF.",
    )
    p.add_argument("analysis", help="a saved analysis (.json, as tfviz export -o x.json writes)")
    p.add_argument("output", help="the image to write")
    p.add_argument("--format", choices=("png", "svg", "pdf"), help="default: the output's extension")
    p.add_argument(
        "--expand",
        choices=EXPANSIONS,
        default="default",
        help="which groups are open (default: as the window opens the graph)",
    )
    p.add_argument("--scale", type=float, default=1.0, help="PNG pixels per scene unit (default 1)")
    p.add_argument(
        "--checked",
        action="store_true",
        help="tfviz checks the analysis itself and keeps the image only if the check passes:"
        " read it without checking it (tfviz export passes this)",
    )
    return p


def render(
    analysis: str,
    output: str,
    fmt: str | None = None,
    expand: str = "default",
    scale: float = 1.0,
    checked: bool = False,
) -> str:
    """Draw ``analysis`` into ``output``; a one-line summary. Raises ExportError or
    AnalysisFileError with the reason. ``checked``: see :func:`read`."""
    from PySide6.QtWidgets import QApplication

    from ..scene import GraphScene
    from .image import size_text, write_image

    report = read(analysis, checked)
    _app = QApplication.instance() or QApplication([sys.argv[0]])
    scene = GraphScene()
    scene.set_report(report)
    scene.expanded = scene.expansion(expand)
    scene.build()
    page = write_image(scene, output, fmt, scale=scale)
    fmt = (fmt or os.path.splitext(output)[1].lstrip(".")).lower()
    if fmt == "png":
        size = size_text(*page.pixels(scale))
    else:
        size = f"{page.width:.0f} × {page.height:.0f} (vector)"
    return f"{len(scene.node_items)} boxes ({expand}), {size}"


def read(analysis: str, checked: bool) -> Report:
    """The analysis in ``analysis``. ``checked``: tfviz checks the file itself, in its own
    process, and keeps the image only if the check passes (tfviz wrote the file a moment ago
    from a checked report, or is checking a saved file while this draws it). It is then
    rebuilt as the window rebuilds a worker's answer (:meth:`Report.from_dict`), with names
    XML cannot hold escaped, not checked field by field a second time (2 of the 10 s a
    100,000-op graph takes to become an SVG). Otherwise it is a file from anywhere, and
    :func:`~tfviz.analysisfile.load_analysis` checks all of it."""
    from tfviz.analysisfile import load_analysis
    from tfviz.outputs import xml_safe_loads
    from tfviz.report import Report, collector_paused

    if not checked:
        return load_analysis(analysis)
    with open(analysis, encoding="utf-8") as fh, collector_paused():
        return Report.from_dict(xml_safe_loads(fh.read()))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from tfviz.analysisfile import AnalysisFileError
    from tfviz.report import collector_paused

    from .image import ExportError

    try:
        # The report, the layout and the scene are millions of objects that live until the
        # image is written, none freed by the cycle collector: its passes over them took a
        # quarter of the time (a 100 MB analysis: 9.1 s, 7.0 s without).
        with collector_paused():
            print(render(args.analysis, args.output, args.format, args.expand, args.scale, args.checked))
    except (ExportError, AnalysisFileError) as exc:
        print(f"tfviz: {exc}", file=sys.stderr)
        return ExitStatus.ERROR
    return ExitStatus.OK


if __name__ == "__main__":
    status = main()
    # The image is written and closed. Freeing the scene and the report object by object
    # would take a second more for a graph of 100,000 ops; the process ends without.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
