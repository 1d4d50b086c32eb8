"""The argparse pieces the commands share. Imports nothing but argparse."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, TypeAlias

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
        metavar="NAME",
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


def command_parser(
    sub: Subparsers,
    name: str,
    *,
    summary: str,
    description: str,
    examples: list[tuple[str, str]],
    usage: str | None = None,
    notes: str = "",
) -> argparse.ArgumentParser:
    """A command's parser, whose ``--help`` says what it does (``description``), then its
    options with their defaults, then ``notes`` and worked ``examples`` (each a command line
    and what it does). ``summary`` is its line in ``tfviz --help``."""
    lines = [textwrap.fill(notes.strip(), _WIDTH), ""] if notes else []
    lines.append("examples:")
    for command, what in examples:
        lines += [f"  {command}", f"      {what}"]
    return sub.add_parser(
        name,
        help=summary,
        description=textwrap.fill(description, _WIDTH),
        usage=usage,
        epilog="\n".join(lines),
        formatter_class=_HelpFormatter,
    )


#: where the description and notes wrap, as argparse wraps the options on a terminal
_WIDTH = 79


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Description and epilog as written (the examples keep their lines); options wrapped."""


def add_color_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the report: auto (on a terminal, unless NO_COLOR is set; FORCE_COLOR"
        " turns it on elsewhere), always or never (default: auto)",
    )


def use_color(choice: str, stream: IO[str], env: Mapping[str, str]) -> bool:
    """Whether to colour what goes to ``stream``: ``--color`` first, then ``NO_COLOR``
    (https://no-color.org: set and not empty), then ``FORCE_COLOR``, then whether it is a terminal.

    >>> import io
    >>> use_color("auto", io.StringIO(), {"FORCE_COLOR": "1"}), use_color("auto", io.StringIO(), {})
    (True, False)
    >>> use_color("always", io.StringIO(), {"NO_COLOR": "1"}), use_color("never", io.StringIO(), {})
    (True, False)
    >>> use_color("auto", io.StringIO(), {"NO_COLOR": "1", "FORCE_COLOR": "1"})
    False
    """
    if choice != "auto":
        return choice == "always"
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a file
        return False
