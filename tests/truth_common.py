"""What the two ground-truth runners (program_truth.py, update_truth.py) share.

Both run a user's program in their own process and stop it from inside once
they have seen what they came for; neither imports tfviz.
"""

from __future__ import annotations


class Stop(BaseException):
    """Raised eagerly to stop the program once its step has been observed."""


class GraphStop(Exception):
    """Raised inside a traced step's numpy_function once the step has been observed."""


def error_text(exc: BaseException) -> str:
    """``Type: first line`` of an exception.

    >>> error_text(ValueError("bad\\nmore"))
    'ValueError: bad'
    """
    message = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {message[0] if message else ''}".rstrip(": ")


def shape_of(obj) -> list | None:
    """A tensor's or variable's shape as a list (None for unknown dims).

    >>> shape_of(object()) is None
    True
    """
    try:
        return [None if d is None else int(d) for d in obj.shape]
    except (AttributeError, TypeError, ValueError):
        return None
