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
