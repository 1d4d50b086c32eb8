"""The script's output, batched into few ``log`` messages for the worker's channel.

A script that prints 50 MB in short lines would otherwise become ~500,000
messages, each parsed and drawn on its own by the window. Here the text is
sent in messages of at most ``max_bytes`` of JSON (64 KB), or ``delay``
seconds (50 ms) after its first unsent character, whichever comes first, so
a program that prints one line and then sleeps still shows it at once.

Every message of the channel is written under one lock, and the channel
flushes the pending text before any other message (progress, result,
error) and before the process exits, so the order of everything the script
printed and everything tfviz said is kept.

>>> batches = LogBatches(max_bytes=80)
>>> full = batches.add("stdout", "a" * 100)  # longer than one message: split
>>> [len(line) for line in full], [json.loads(line)["text"] for line in batches.take()]
([80, 80, 80], ['a'])
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from json.encoder import encode_basestring_ascii  # the C encoder json.dumps uses
from typing import NoReturn

#: The longest ``log`` message, in bytes of JSON.
MAX_BYTES = 64 * 1024
#: The longest a printed character waits before it is sent, in seconds.
DELAY_S = 0.05


def _head(stream: str) -> str:
    return '{"type": "log", "stream": ' + json.dumps(stream) + ', "text": "'


class LogBatches:
    """Text in, whole JSON lines (each at most ``max_bytes``) out; no threads, no clock."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.stream: str | None = None
        self._parts: list[str] = []  # JSON-escaped text, without quotes
        self._size = 0
        self._room = 0

    @property
    def pending(self) -> bool:
        return bool(self._parts)

    def add(self, stream: str, text: str) -> list[str]:
        """Buffer ``text``; the messages that are full now (in order)."""
        out: list[str] = []
        if stream != self.stream:
            out += self.take()
            self.stream = stream
            self._room = max(16, self.max_bytes - len(_head(stream)) - 2)
        enc = encode_basestring_ascii(text)[1:-1]
        if self._size + len(enc) <= self._room:
            self._parts.append(enc)
            self._size += len(enc)
            return out
        if len(enc) > self._room:  # longer than a message: split it at character boundaries
            start = 0
            while start < len(text):
                n = min(len(text) - start, self._room - self._size)
                if n < 1:
                    out += self.take()
                    continue
                piece = encode_basestring_ascii(text[start : start + n])[1:-1]
                while len(piece) > self._room - self._size:
                    n = max(1, n * (self._room - self._size) // len(piece) - 1)
                    piece = encode_basestring_ascii(text[start : start + n])[1:-1]
                    if len(piece) > self._room - self._size and n == 1:
                        out += self.take()  # one character that does not fit what is left
                self._parts.append(piece)
                self._size += len(piece)
                start += n
            return out
        out += self.take()
        self._parts.append(enc)
        self._size = len(enc)
        return out

    def take(self) -> list[str]:
        """Everything still buffered, as (at most one) message."""
        if not self._parts:
            return []
        line = _head(self.stream or "stdout") + "".join(self._parts) + '"}'
        self._parts, self._size = [], 0
        return [line]


class LogSender:
    """:class:`LogBatches` with the clock: a daemon thread sends pending text after ``delay``.

    ``write_line`` writes one JSON line; it is called with ``lock`` held, the
    lock under which the channel writes all its messages.
    """

    def __init__(
        self,
        write_line: Callable[[str], None],
        lock: threading.RLock,
        max_bytes: int = MAX_BYTES,
        delay: float = DELAY_S,
    ) -> None:
        self._write_line = write_line
        self._cond = threading.Condition(lock)
        self._batches = LogBatches(max_bytes)
        self.delay = delay
        self._deadline: float | None = None
        self._thread: threading.Thread | None = None

    def write(self, stream: str, text: str) -> None:
        """What the script printed (any thread)."""
        if not text:
            return
        with self._cond:
            full = self._batches.add(stream, text)
            if full:
                self._deadline = None
                for line in full:
                    self._write_line(line)
            if self._batches.pending and self._deadline is None:
                self._deadline = time.monotonic() + self.delay
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="tfviz-log", daemon=True)
                    self._thread.start()
                self._cond.notify()

    def flush(self) -> None:
        """Send what is pending now (the caller may hold the lock)."""
        with self._cond:
            self._deadline = None
            for line in self._batches.take():
                self._write_line(line)

    def flush_before_exit(self, timeout: float = 1.0) -> None:
        """:meth:`flush`, unless another thread has held the lock for ``timeout``
        (a pipe nobody reads): exiting matters more than the last lines."""
        if self._cond.acquire(timeout=timeout):
            try:
                self.flush()
            except (OSError, ValueError):
                pass  # the reader is gone
            finally:
                self._cond.release()

    def _run(self) -> None:
        with self._cond:
            while True:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                try:
                    self.flush()
                except (OSError, ValueError):
                    return  # the channel is closed: nothing more can be sent


def flush_at_exit(sender: LogSender) -> None:
    """Make ``os._exit`` (the worker's own, or the script's) send the pending
    output first, so the last lines before an exit are never lost."""
    real_exit = os._exit

    def _exit(status: int) -> NoReturn:
        from tfviz.script.streams import drain_all

        drain_all()  # what the script wrote to its file descriptors, not read yet
        sender.flush_before_exit()
        real_exit(status)

    _exit.__doc__ = real_exit.__doc__
    os._exit = _exit
