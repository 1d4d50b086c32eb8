"""Map a stack to the user's own line, skipping library frames."""

from __future__ import annotations

import functools
import linecache
import os
import sys
import sysconfig
import types
import weakref
from collections.abc import Iterable, Sequence
from typing import Any, cast

from tfviz.report import Source
from tfviz.vocabulary import READ_OUT_AS

_TFVIZ_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the tfviz package
#: installed, the bundled examples sit inside tfviz (and site-packages), yet they are user code
_EXAMPLES_DIR = os.path.join(_TFVIZ_DIR, "examples")
_LIB_DIRS = tuple(
    {
        os.path.abspath(p)
        for p in (
            sysconfig.get_paths().get("stdlib"),
            sysconfig.get_paths().get("purelib"),
            sysconfig.get_paths().get("platlib"),
            sys.prefix,
            sys.base_prefix,
        )
        if p
    }
)


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    """True for the user's code: not the standard library, site-packages or tfviz.

    >>> is_user_file(os.__file__)
    False
    >>> is_user_file("/home/me/project/train.py")
    True
    >>> is_user_file("<string>")
    False
    """
    if not filename or filename.startswith("<"):
        return False
    if os.path.basename(filename).startswith("__autograph_generated"):
        return False
    path = os.path.abspath(filename)
    if path.startswith(_EXAMPLES_DIR + os.sep):
        return True
    if path.startswith(_TFVIZ_DIR + os.sep):
        return False
    if "site-packages" in path or "dist-packages" in path:
        return False
    return not any(path.startswith(d + os.sep) for d in _LIB_DIRS)


def user_source(frames: Iterable[Any], innermost_first: bool = False) -> Source | None:
    """The innermost user frame of ``frames`` (objects with filename/lineno).

    ``frames`` run outermost first, as in TensorFlow's op tracebacks and
    ``traceback.extract_tb``. An op's traceback is read by index from its innermost frame:
    making every frame of it a Python object cost twice as much, for each of a model's
    thousands of ops.

    >>> from types import SimpleNamespace as F
    >>> user_source([F(filename="/home/me/train.py", lineno=3), F(filename=os.__file__, lineno=9)]).line
    3
    """
    seq: Iterable[Any]
    if innermost_first:
        seq = frames
    elif isinstance(frames, Sequence) or (hasattr(frames, "__getitem__") and hasattr(frames, "__len__")):
        indexed: Any = frames
        seq = (indexed[i] for i in range(len(indexed) - 1, -1, -1))
    else:
        seq = reversed(list(frames))
    for fr in seq:
        filename = getattr(fr, "filename", None)
        if filename and is_user_file(filename):
            line = int(getattr(fr, "lineno", 0) or 0)
            return Source(file=filename, line=line, code=code_at(filename, line))
    return None


def running_user_source(skip: int = 0) -> Source | None:
    """The innermost user frame of the running stack (above the caller and ``skip`` more):
    what :func:`user_source` finds in the traceback of an op made here, read off the frames
    themselves, where an op's traceback makes an object of each of its dozens of frames."""
    frame: types.FrameType | None = sys._getframe(skip + 2)
    known = _user_files
    while frame is not None:
        filename = frame.f_code.co_filename
        user = known.get(filename)
        if user is None:
            user = known[filename] = is_user_file(filename)
        if user:
            line = frame.f_lineno
            return Source(file=filename, line=line, code=code_at(filename, line))
        frame = frame.f_back
    return None


#: frames a read of a value passes on its way from the user's code: NumPy's own functions
#: (``np.mean(t)``), tfviz's patches and AutoGraph's wrapper around them (``do_not_convert``)
_PASSED = (f"{os.sep}numpy{os.sep}", _TFVIZ_DIR + os.sep)
_AUTOGRAPH_WRAPPER = os.path.join("autograph", "impl", "api.py")


def reading_user_line(frame: types.FrameType | None) -> Source | None:
    """The user's line that read a tensor's value (``.numpy()``, ``float()``), where ``frame``,
    the read's caller, is the user's code past the frames of :data:`_PASSED` and a variable's
    own read methods (``gain.numpy()`` reads a tensor inside TensorFlow); None where TensorFlow
    or Keras read it for themselves, or where AutoGraph's conversion of the user's code did."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if is_user_file(filename) or not (
            any(part in filename for part in _PASSED)
            or filename.endswith(_AUTOGRAPH_WRAPPER)
            or frame.f_code.co_name in READ_OUT_AS
        ):
            break
        frame = frame.f_back
    if frame is None or not is_user_file(frame.f_code.co_filename):
        return None
    filename, line = frame.f_code.co_filename, frame.f_lineno
    return Source(file=filename, line=line, code=code_at(filename, line))


#: :func:`is_user_file` of each file name met on a running stack: each op of a Keras model
#: walks 20 to 40 frames to its user's line, and a dictionary's lookup per frame, not the
#: cache's call, halved the walk (ResNet50's 1,900 ops: 8 µs an op against 4.5)
_user_files: dict[str, bool] = {}


#: the op whose user line was read last (the id of its outputs, a weak reference to the
#: first) and that line: the origin recorder and the eager copy are op callbacks of the
#: same op, handed the same outputs, and both want its line
_last_op: list[Any] = [0, None, None]


def op_user_source(outputs: Any) -> Source | None:
    """:func:`running_user_source` for the op an op callback is handed the ``outputs`` of,
    read off the stack once for all the callbacks of that op."""
    if outputs:
        ref = _last_op[1]
        if _last_op[0] == id(outputs) and ref is not None and ref() is outputs[0]:
            return cast("Source | None", _last_op[2])
    source = running_user_source(1)
    if outputs:
        try:
            _last_op[:] = [id(outputs), weakref.ref(outputs[0]), source]
        except TypeError:  # not weakly referable: read again by the next callback
            _last_op[:] = [0, None, None]
    return source


def code_at(filename: str, line: int) -> str:
    return linecache.getline(filename, line).strip()
