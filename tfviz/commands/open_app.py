"""``tfviz open [SCRIPT] [--target F] [--run] [--step N] [-- ARGS...]``: the desktop app.

Not headless: the console script (``app.launch``) opens the window itself, since the
library never imports the GUI. Here are only its options, so ``tfviz --help`` lists it, and
:func:`run`, for ``python -m tfviz.cli open``, which has no window to open.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from tfviz.commands.args import add_step_options, command_parser
from tfviz.exitstatus import ExitStatus

if TYPE_CHECKING:
    from tfviz.commands.args import Subparsers


def add_parser(sub: Subparsers) -> None:
    o = command_parser(
        sub,
        "open",
        summary="open a script in the desktop app",
        usage="tfviz [open] [SCRIPT] [--target NAME] [--run] [--step N] [-- ARGS...]",
        description="Open the desktop app, and analyze SCRIPT in it: the graph, the variables,"
        " the problems at their lines, the Jacobian heatmaps. A saved analysis (.json) opens"
        " as it was saved. The word open may be left out.",
        examples=[
            ("tfviz", "the app, with nothing open"),
            ("tfviz train.py", "open train.py and analyze its first gradient step"),
            ("tfviz train.ipynb --step 2 -- --lr 0.1", "a notebook's second step, with arguments"),
            ("tfviz analysis.json", "a saved analysis (tfviz export -o analysis.json)"),
        ],
    )
    o.add_argument("script", nargs="?", help="a script, notebook or saved analysis (.json) to open")
    add_step_options(o)


def run(args: argparse.Namespace) -> ExitStatus:
    print("tfviz: the desktop app starts from the `tfviz` command", file=sys.stderr)
    return ExitStatus.ERROR
