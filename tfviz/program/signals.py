"""Signal handlers a program installs while it runs in tfviz's program thread.

Python lets only the main thread install signal handlers; the program runs
in another one (see :mod:`tfviz.program.launch`), where ``signal.signal``
would raise ValueError in a program that works under ``python``. Its
handlers (a graceful-shutdown hook, mostly) are not installed: tfviz ends
the program at its step, and a handler of the program's must not run then.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def main_thread_only() -> Iterator[None]:
    """While active, ``signal.signal`` from another thread installs nothing and
    returns the handler in place, as if it had been set."""
    original = signal.signal

    def install(signalnum: Any, handler: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            return original(signalnum, handler)
        return signal.getsignal(signalnum)

    install.__doc__ = original.__doc__
    signal.signal = install
    try:
        yield
    finally:
        signal.signal = original
