"""Reading a file by its path without ever waiting on it.

A path can name a FIFO (a read waits for a writer forever), a device (``/dev/zero``
never ends) or a kernel file that looks regular but blocks until the kernel has
something to say (``/proc/kmsg``). :func:`read_regular` reads only regular files
outside ``/proc``, ``/sys`` and ``/dev``, checks the kind of file again on the open
descriptor (the path may have been swapped between the two), opens it non-blocking, and
stops at a size cap, so a read always ends at once.

>>> import tempfile
>>> with tempfile.NamedTemporaryFile(suffix=".py") as fh:
...     _ = fh.write(b"x = 1\\n"); fh.flush()
...     read_regular(fh.name, 100)
b'x = 1\\n'
>>> read_regular("/dev/zero", 100)
Traceback (most recent call last):
...
tfviz.safefile.NotReadable: /dev/zero is a kernel or device file, not a regular file
"""

from __future__ import annotations

import os
import stat

#: Kernel and device file systems: their "regular" files may block or never end.
SPECIAL_ROOTS = ("/proc/", "/sys/", "/dev/")


class NotReadable(OSError):
    """The path is not a regular file that can be read at once, or it is too large."""


class TooLarge(NotReadable):
    """The file is larger than the caller's cap."""


def read_regular(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of the regular file at ``path``; raises :class:`NotReadable` for anything
    else (a FIFO, a device, a file under ``/proc``, one larger than ``max_bytes``) and
    ``OSError`` when it cannot be opened."""
    name = os.fspath(path)
    real = os.path.realpath(name)
    if any(real.startswith(root) or real == root.rstrip("/") for root in SPECIAL_ROOTS):
        raise NotReadable(f"{name} is a kernel or device file, not a regular file")
    if not stat.S_ISREG(os.stat(name).st_mode):
        raise NotReadable(f"{name} is not a regular file")
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    )
    fd = os.open(name, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced by a FIFO or a device since the stat
            raise NotReadable(f"{name} is not a regular file")
        if st.st_size > max_bytes:
            raise TooLarge(f"{name} is larger than {max_bytes // 2**20} MB")
        parts: list[bytes] = []
        size = 0
        while size <= max_bytes:
            try:
                chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            except BlockingIOError:
                raise NotReadable(f"{name} cannot be read without waiting") from None
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
        if size > max_bytes:  # grew while being read
            raise TooLarge(f"{name} is larger than {max_bytes // 2**20} MB")
        return b"".join(parts)
    finally:
        os.close(fd)
