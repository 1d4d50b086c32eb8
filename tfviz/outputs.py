"""Every file tfviz writes goes through here, so that none is ever left half-written.

:func:`replacing` writes beside the destination under a temporary name and renames it
into place (``os.replace``) only once the file is complete: a write that fails (a disk
full, a name UTF-8 cannot encode, Ctrl-C) leaves the old file as it was and no temporary
file behind. Only regular files are replaced: renaming over a device node as root would
replace it system-wide (``-o /dev/full``), and a FIFO or a terminal is never a file the
user means to keep, so both are refused with one line (:class:`OutputError`).

:func:`check_output` is the refusal the commands make before running anything: never the
script itself, never a folder, a FIFO or a device, never a file tfviz did not write
unless ``--force``. Whether tfviz wrote a file is read from its first bytes, and only after
``lstat`` says it is a regular file, so a FIFO is never opened (that blocked forever).

:func:`xml_safe` makes any name one XML 1.0 (SVG, GraphML) and UTF-8 (DOT) can hold.

>>> xml_safe("relu\\x1b[0m\\x00\\ufffe\\udc80 ok")
'relu\\\\x1b[0m\\\\x00\\\\ufffe\\\\udc80 ok'
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

#: What tfviz puts at the start of every DOT, GraphML, CSV and image it writes (a PDF has it
#: in UTF-16): how it recognises its own files, which it may replace without ``--force``.
SIGNATURE = "written by tfviz"
#: How much of a file is read to find the signature (a PNG's text chunk, a PDF's creator).
HEAD_BYTES = 4096
#: Characters XML 1.0 cannot hold, not even as ``&#...;``; surrogates are not characters
#: (UTF-8 cannot encode them either).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class OutputError(OSError):
    """The file cannot, or must not, be written. ``strerror`` is why, in words (so that an
    ``except OSError`` printing ``exc.strerror`` says it); ``str()`` is the whole line."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(errno.EINVAL, reason, path)

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}"


def xml_safe(text: str) -> str:
    """``text`` with each character XML 1.0 cannot hold (controls, U+FFFE/U+FFFF, lone
    surrogates) written out as a Python escape, so that the name stays readable."""
    return _NOT_XML.sub(lambda m: _escape(m.group()), text)


def xml_safe_tree(value: Any) -> Any:
    """:func:`xml_safe` on every string (keys too) of a JSON-like document."""
    if isinstance(value, str):
        return xml_safe(value)
    if isinstance(value, dict):
        return {xml_safe_tree(k): xml_safe_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [xml_safe_tree(v) for v in value]
    return value


def xml_safe_json(doc: Any) -> str:
    """``json.dumps(xml_safe_tree(doc))``, without the walk when no string needs it.

    The walk rebuilds every dict and list of the document (5 s for a graph of 100,000 ops),
    though names that XML cannot hold are rare. In JSON written with ``ensure_ascii=False``
    such a character shows either as itself (U+FFFE, a lone surrogate) or as an escape
    (``\\u0000``-``\\u001f``, ``\\b``, ``\\f``); when the text holds neither, nothing needed
    changing. A backslash in a name can look like an escape here, and then the walk runs:
    the check errs only towards the slow path.
    """
    text = json.dumps(doc, ensure_ascii=False, allow_nan=False)
    if _NOT_XML.search(text) is None and not any(e in text for e in ("\\u00", "\\b", "\\f")):
        return text
    return json.dumps(xml_safe_tree(doc), ensure_ascii=False, allow_nan=False)


#: In JSON text, an escape that may stand for a character XML cannot hold: a control
#: (``\\u0000``-``\\u001f``, ``\\b``, ``\\f``), a surrogate (``\\ud800``-``\\udfff``) or
#: U+FFFE/U+FFFF. It errs only towards the walk (a backslash then ``b``, ``\\\\b``, matches too).
_MAYBE_NOT_XML_ESCAPE = re.compile(r"\\(?:[bf]|u(?:00[01]|[dD][89a-fA-F]|[fF]{3}[eEfF]))")


def xml_safe_loads(text: str) -> Any:
    """``xml_safe_tree(json.loads(text))``, without the walk when the text shows no
    character XML cannot hold, neither as itself nor as an escape: a saved analysis from
    anywhere, read for drawing, is walked only when it needs it (the walk rebuilds the whole
    document)."""
    doc = json.loads(text)
    if _NOT_XML.search(text) is None and _MAYBE_NOT_XML_ESCAPE.search(text) is None:
        return doc
    return xml_safe_tree(doc)


def _escape(ch: str) -> str:
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def destination(path: str) -> str:
    """Where writing ``path`` lands: the file a symlink points to (a link is followed, as
    ``open`` would, not replaced). Raises :class:`OutputError` when that is anything but a
    regular file or a new name in an existing folder."""
    try:
        st: os.stat_result | None = os.stat(path)  # through links: /dev/stdout is a pipe or a tty
    except FileNotFoundError:
        st = None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise OutputError(path, getattr(exc, "strerror", None) or str(exc)) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputError(
            path, f"it is {_kind(st.st_mode)}, not a regular file; tfviz writes only regular files"
        )
    real = os.path.realpath(path) if os.path.islink(path) else path
    if st is None:
        folder = os.path.dirname(os.path.abspath(real))
        if not os.path.isdir(folder):
            raise OutputError(path, f"the folder {folder} does not exist")
    return real


def written_by_tfviz(path: str) -> bool:
    """Whether the regular file at ``path`` starts as the files tfviz writes do. Never opens
    anything but a regular file (O_NOFOLLOW and O_NONBLOCK, checked again with fstat)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        fd = os.open(
            path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        )
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, HEAD_BYTES)
        if head.startswith(b"PAR1"):  # Parquet (a --record): the signature is in the footer's metadata
            size = os.fstat(fd).st_size
            head = os.pread(fd, HEAD_BYTES, max(0, size - HEAD_BYTES))
    except OSError:
        return False
    finally:
        os.close(fd)
    if SIGNATURE.encode() in head or SIGNATURE.encode("utf-16-be") in head:
        return True
    return head.lstrip().startswith(b"{") and b'"tfviz"' in head  # a saved analysis (check --graph)


def check_output(
    path: str, script: str | None = None, force: bool = False, flag: str = "-o", why_not_ours: str = ""
) -> None:
    """Refuse, before anything runs, an output ``flag`` must not write: not a regular file
    or a new name in an existing folder, the ``script`` itself, or (without ``force``) an
    existing file tfviz did not write. Raises :class:`tfviz.errors.AnalysisError` naming
    ``path``; ``why_not_ours`` says why a format cannot be recognised as tfviz's."""
    from tfviz.errors import AnalysisError

    try:
        real = destination(path)
    except OutputError as exc:
        raise AnalysisError(f"cannot write {flag} {path}: {exc.strerror}") from None
    if not os.path.lexists(real):
        return
    if script and os.path.exists(script) and os.path.samefile(real, script):
        raise AnalysisError(f"{flag} names the script being analyzed; refusing to overwrite it", file=path)
    if not force and not written_by_tfviz(real):
        raise AnalysisError(
            f"{flag} would overwrite {path}, which is not a file tfviz wrote"
            f"{why_not_ours}; use --force to replace it",
            file=path,
        )


@contextmanager
def temporary_beside(path: str) -> Iterator[str]:
    """A temporary file's path in ``path``'s folder; when the block ends without an
    exception it is renamed onto ``path``, else removed. For writers that want a name
    (``QPdfWriter``); :func:`replacing` gives an open file. Raises :class:`OutputError`."""
    real = destination(path)
    folder, name = os.path.split(os.path.abspath(real))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tfviz-tmp", dir=folder)
        os.close(fd)
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc)) from None
    try:
        yield tmp
        match_mode(tmp, real)
        destination(path)  # still a regular file or nothing: never rename over a device
        os.replace(tmp, real)
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise OutputError(path, f"{bad!r} cannot be encoded as {exc.encoding}") from None
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(path, exc.strerror or str(exc)) from None
    finally:
        if os.path.lexists(tmp):
            os.remove(tmp)


@contextmanager
def replacing(path: str, binary: bool = False) -> Iterator[IO[Any]]:
    """An open file (UTF-8 text, or bytes) whose contents replace ``path`` when the block
    ends without an exception; on any failure ``path`` is untouched. Raises
    :class:`OutputError` (an OSError) with the reason in words."""
    with temporary_beside(path) as tmp:
        with open(tmp, "wb") if binary else open(tmp, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())  # complete on disk before it takes the old file's name


def match_mode(tmp: str, real: str) -> None:
    """The replaced file's permissions, or a new file's (0666 less the umask), not
    mkstemp's 0600."""
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        umask = os.umask(0o022)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(tmp, mode)
