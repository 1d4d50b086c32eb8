"""The program's standard streams: real text streams over real file descriptors, captured.

While a :class:`Capture` is active, file descriptors 1 and 2 are pipes that tfviz reads,
and ``sys.stdout``/``sys.stderr`` are ``io.TextIOWrapper`` objects over them, as under
``python``: ``.buffer``, ``.reconfigure()`` and ``.fileno()`` work, a subprocess handed
``stdout=sys.stdout`` writes into the same pipe, and so do ``faulthandler`` and TensorFlow's
C++ logging. Everything that reaches a pipe is recorded (``getvalue()``) and passed on live
to ``on_text``, in the order it was written to that stream.

What Python writes is passed on as it is flushed, by the writing thread itself, and
across the two streams its order is kept: before a write to one stream, what is waiting in
the other's pipe is passed on first. Each pipe is drained under its own lock, by its reader
thread or by such a writer, so no byte is passed on twice or out of turn. :func:`drain_all`
passes on what every active pipe holds (the worker calls it before ``os._exit``).
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import select
import sys
import threading
from collections.abc import Callable, Iterator

OnText = Callable[[str, str], None]

#: How long ending a capture waits for a pipe that a process the program started still
#: holds open (a background child): what it writes later still reaches ``on_text``.
_JOIN_S = 0.5


class _Pipe:
    """One redirection's pipe: its read end and the decoder of what comes out of it."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.closed = False


#: the streams whose pipes are in place now (see :func:`drain_all`)
_ACTIVE: set[CapturedStream] = set()


def drain_all() -> None:
    """Pass on what every active capture's pipes hold: the process is about to end."""
    for stream in list(_ACTIVE):
        stream.drain()


class CapturedStream:
    """One of the program's two streams: the pipe behind its file descriptor, and its text."""

    def __init__(self, name: str, fd: int, on_text: OnText | None) -> None:
        self.name, self.fd, self.on_text = name, fd, on_text
        self._parts: list[str] = []
        self._lock = threading.RLock()
        self._pipe: _Pipe | None = None
        #: the other stream of the pair: drained before this one is written to
        self.other: CapturedStream | None = None

    def getvalue(self) -> str:
        with self._lock:
            return "".join(self._parts)

    @contextlib.contextmanager
    def redirected(self) -> Iterator[io.TextIOWrapper]:
        """Point ``fd`` at a fresh pipe for the block; yield a text stream over it."""
        saved = os.dup(self.fd)
        pipe = _Pipe()
        os.dup2(pipe.write_fd, self.fd)
        os.close(pipe.write_fd)
        with self._lock:
            self._pipe = pipe
        _ACTIVE.add(self)
        thread = threading.Thread(target=self._read_until_closed, args=(pipe,), daemon=True)
        thread.name = f"tfviz-{self.name}"
        thread.start()
        stream = _text_stream(_PipeWriter(self.fd, self), self.name)
        try:
            yield stream
        finally:
            with contextlib.suppress(Exception):
                stream.flush()
            _ACTIVE.discard(self)
            os.dup2(saved, self.fd)  # closes our end of the pipe: the reader sees its end
            os.close(saved)
            thread.join(_JOIN_S)  # a child the program started may hold it open for longer
            with self._lock:
                self._read(pipe)
                if self._pipe is pipe:
                    self._pipe = None

    def drain(self) -> None:
        """Pass on, now, whatever is waiting in the pipe."""
        with self._lock:
            if self._pipe is not None:
                self._read(self._pipe)

    def _read_until_closed(self, pipe: _Pipe) -> None:
        while True:
            try:
                select.select([pipe.read_fd], [], [])
            except (OSError, ValueError):
                return
            with self._lock:
                self._read(pipe)
                if pipe.closed:
                    return

    def _read(self, pipe: _Pipe) -> None:
        """Pass on what ``pipe`` holds (the caller holds the lock); close it at its end,
        once every writer has closed it."""
        while not pipe.closed:
            try:
                data = os.read(pipe.read_fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if data:
                self._record(pipe.decoder.decode(data))
                continue
            self._record(pipe.decoder.decode(b"", final=True))
            pipe.closed = True
            os.close(pipe.read_fd)

    def _record(self, text: str) -> None:
        if not text:
            return
        self._parts.append(text)
        if self.on_text is not None:
            self.on_text(self.name, text)


class _PipeWriter(io.FileIO):
    """The raw file under the program's ``sys.stdout``/``sys.stderr``: a plain file on the
    pipe, that first passes on what the other stream's pipe holds (see the module's doc)."""

    def __init__(self, fd: int, stream: CapturedStream) -> None:
        super().__init__(fd, "w", closefd=False)
        self._stream = stream

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        other = self._stream.other
        if other is not None:
            other.drain()
        written = super().write(data) or 0
        self._stream.drain()  # recorded now, in this thread: an os._exit next loses nothing
        return written


def _text_stream(raw: io.FileIO, name: str) -> io.TextIOWrapper:
    """What ``python`` makes of a standard stream, line-buffered as on a terminal so the
    window's Log shows each line as it is printed."""
    encoding = getattr(sys.__stdout__, "encoding", None) or "utf-8"
    errors = "backslashreplace" if name == "stderr" else "strict"
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=encoding, errors=errors, line_buffering=True)


class Capture:
    """The program's stdout and stderr while it runs (optionally echoed to ``on_text``)."""

    def __init__(self, on_text: OnText | None = None) -> None:
        self.out = CapturedStream("stdout", 1, on_text)
        self.err = CapturedStream("stderr", 2, on_text)
        self.out.other, self.err.other = self.err, self.out

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.flush()  # what was written before goes where it was going
        saved = sys.stdout, sys.stderr
        with self.out.redirected() as out, self.err.redirected() as err:
            sys.stdout, sys.stderr = out, err
            try:
                yield
            finally:
                sys.stdout, sys.stderr = saved
