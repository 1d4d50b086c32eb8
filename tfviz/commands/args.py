"""The argparse pieces the commands share. Imports nothing but argparse."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    #: What ``ArgumentParser.add_subparsers()`` returns: each command adds its parser to it.
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]


def positive(text: str) -> int:
    """``--step N``: a whole number of at least 1.

    >>> positive("3")
    3
    >>> positive("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a whole number of at least 1, got '0'
    """
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return n


def add_step_options(parser: argparse.ArgumentParser) -> None:
    """``--target``, ``--run`` and ``--step``: what of the script to diagnose, as every command
    that analyzes one asks it."""
    parser.add_argument(
        "--target",
        help="a zero-argument function to differentiate instead of running"
        " the program (default: loss, when the script defines it)",
    )
    parser.add_argument(
        "--run", action="store_true", help="run the script as a program even if it defines loss()"
    )
    parser.add_argument(
        "--step",
        type=positive,
        default=1,
        metavar="N",
        help="diagnose the program's N-th gradient computation (default: 1)",
    )
