"""``tfviz open [SCRIPT] [--target F] [--run] [--step N] [-- ARGS...]``: the desktop app.

Not headless: the console script (``app.launch``) opens the window itself, since the
library never imports the GUI. Here are only its options, so ``tfviz --help`` lists it, and
:func:`run`, for ``python -m tfviz.cli open``, which has no window to open.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from tfviz.commands.args import positive
from tfviz.exitstatus import ExitStatus

if TYPE_CHECKING:
    from tfviz.commands.args import Subparsers


def add_parser(sub: Subparsers) -> None:
    o = sub.add_parser("open", help="open a script in the desktop app")
    o.add_argument("script", nargs="?")
    o.add_argument("--target")
    o.add_argument("--run", action="store_true")
    o.add_argument("--step", type=positive, default=1, metavar="N")


def run(args: argparse.Namespace) -> ExitStatus:
    print("tfviz: the desktop app starts from the `tfviz` command", file=sys.stderr)
    return ExitStatus.ERROR
