"""What the two ground-truth runners (program_truth.py, update_truth.py) share.

Both run a user's program in their own process and stop it from inside once
they have seen what they came for; neither imports tfviz.
"""

from __future__ import annotations

import contextlib


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


@contextlib.contextmanager
def patched(patches: list[tuple[object, str, object]]):
    """Set each ``(owner, name, replacement)`` for the duration; restore exactly
    (an attribute the owner did not define itself is removed again)."""
    saved = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in patches]
    try:
        for owner, name, replacement in patches:
            setattr(owner, name, replacement)
        yield
    finally:
        for owner, name, value in reversed(saved):
            if value is None:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


def no_jit_patch() -> tuple:
    """A patch of tf.function's ``Function.__init__`` that turns ``jit_compile=True`` off:
    an XLA step cannot run the observers' numpy_function, and its verdict does not depend on XLA."""
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    original_init = polymorphic_function.Function.__init__

    def init(self, python_function, name, *args, **kwargs):
        original_init(self, python_function, name, *args, **kwargs)
        self._jit_compile = False if self._jit_compile else self._jit_compile

    return (polymorphic_function.Function, "__init__", init)
