"""Run the user's script as a module, the way an import would.

The script runs unchanged: ``__name__`` is not ``"__main__"`` (guarded
training loops stay idle), its folder is on ``sys.path`` and is the working
directory, and what it prints is captured rather than mixed into ours
(:mod:`tfviz.script.streams`).
"""

from __future__ import annotations

import ast
import io
import os
import re
import stat
import sys
import tokenize
import traceback
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tfviz.errors import AnalysisError
from tfviz.script.notebook import Notebook, is_notebook
from tfviz.script.notebook import known as known_notebook
from tfviz.script.notebook import namespace as notebook_namespace
from tfviz.script.notebook import read as read_notebook
from tfviz.script.sourcemap import code_at, user_source
from tfviz.script.streams import Capture

if TYPE_CHECKING:
    from tfviz.report import Source

MODULE_NAME = "tfviz_user_script"


@dataclass
class LoadedScript:
    path: str
    module: types.ModuleType
    stdout: str
    stderr: str


def read_source(path: str) -> str:
    """The script's text, decoded as Python decodes it (a BOM, a coding line),
    or a clear error for a missing file, a folder, a FIFO or a device."""
    if not os.path.exists(path):
        raise AnalysisError(f"no such file: {path}", file=path)
    if os.path.isdir(path):
        raise AnalysisError(f"is a folder, not a Python script: {path}", file=path)
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise AnalysisError(
            f"not a regular file (a pipe or a device), not a Python script: {path}", file=path
        )
    if is_notebook(path):  # its code cells, joined: line numbers count through them
        return read_notebook(path).source
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        return raw.decode(encoding)
    except SyntaxError as exc:  # an unknown coding declaration
        raise AnalysisError(
            f"not a Python script: {exc.msg if hasattr(exc, 'msg') else exc}", file=path
        ) from None
    except (UnicodeDecodeError, LookupError) as exc:
        where = f"byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise AnalysisError(
            f"not a Python script (not text in its declared encoding: {where})", file=path
        ) from None
    except OSError as exc:
        raise AnalysisError(f"cannot read the script: {exc.strerror}", file=path) from None


@dataclass(frozen=True)
class Script:
    """A script or notebook read and compiled once, for the whole analysis: a notebook's
    reading (nbformat parses and validates every cell) was repeated up to six times.

    ``path`` is absolute (the code's file name, as tracebacks and the report say it);
    ``notebook`` holds a notebook's cells, None for a ``.py`` file."""

    path: str
    source: str
    #: its syntax tree, parsed once: what the mode, the targets and the hints are read from
    tree: ast.Module
    code: types.CodeType
    notebook: Notebook | None = None

    @classmethod
    def read(cls, path: str) -> Script:
        """Read and compile ``path``; AnalysisError (naming ``path`` as given) when it is
        missing, not a regular file, not text, or not valid Python."""
        full = os.path.abspath(path)
        text = read_source(path)
        tree, code = _compiled(text, path, full)
        return cls(full, text, tree, code, known_notebook(full))


def compile_script(path: str) -> types.CodeType:
    """The script's code; the errors of :meth:`Script.read`."""
    return Script.read(path).code


def _compiled(text: str, path: str, filename: str) -> tuple[ast.Module, types.CodeType]:
    """The tree and the code, parsed once: compiling the tree is compiling the text."""
    try:
        tree = ast.parse(text, filename)
        return tree, compile(tree, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        # Python reads the offending line from the file itself: a notebook's is JSON
        code = text.splitlines()[exc.lineno - 1] if is_notebook(path) and exc.lineno else exc.text
        raise AnalysisError(
            f"syntax error: {exc.msg}",
            file=path,
            line=exc.lineno,
            code=(code or "").strip(),
        ) from None
    except ValueError as exc:  # e.g. null bytes
        raise AnalysisError(f"not a Python script: {exc}", file=path) from None


def load_script(script: Script | str, capture: Capture | None = None) -> LoadedScript:
    """Execute the script (a :class:`Script`, or a path to read) as a fresh module and return it.

    The caller keeps the process's working directory: it changes to the
    script's folder for the whole analysis (tracing may read files too).
    """
    if isinstance(script, str):
        script = Script.read(script)
    path, code = script.path, script.code
    capture = capture or Capture()
    folder = os.path.dirname(os.path.realpath(path))  # as `python script.py` sets sys.path[0]
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = path
    module.__dict__["__builtins__"] = __builtins__
    module.__dict__.update(notebook_namespace(path))  # a notebook's display()
    sys.modules[MODULE_NAME] = module
    with capture.active():
        try:
            exec(code, module.__dict__)  # noqa: S102 - running the user's script is the point
        except SystemExit as exc:
            err = error_from_exception(exc, "", path)
            err.message = f"the script called sys.exit({exc.code!r}) while loading"
            raise err from None
        except BaseException as exc:  # noqa: BLE001 - user code may raise anything
            raise error_from_exception(exc, "the script raised while loading", path) from None
    return LoadedScript(path, module, capture.out.getvalue(), capture.err.getvalue())


def error_from_exception(exc: BaseException, what: str, path: str | None = None) -> AnalysisError:
    """An AnalysisError that points at the user's innermost line in ``exc``'s traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    src = _autograph_source(exc) or user_source(frames)
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    user_tb = "".join(traceback.format_list([f for f in frames if src and f.filename == src.file]))
    first = _first_line(exc)
    if not first.startswith(type(exc).__name__):
        first = f"{type(exc).__name__}: {first}"
    if isinstance(exc, EOFError):
        first += " (the script asked for input; tfviz runs it with an empty stdin)"
    first = _keras_variable_watched(str(exc)) or first
    return AnalysisError(
        f"{what}: {first}",
        file=src.file if src else path,
        line=src.line if src else None,
        code=code_at(src.file, src.line) if src else "",
        detail=(user_tb + detail) if user_tb else detail,
    )


_KERAS_WATCHED = re.compile(
    r"Passed in object <Variable path=([^,>]+).*of type 'Variable', not tf\.Tensor", re.S
)


def _keras_variable_watched(text: str) -> str:
    """What TensorFlow says, without the variable's values, when ``tape.watch`` is handed
    a Keras 3 variable (``tape.watch(model.trainable_variables)``, as Keras 2 allowed),
    and what to watch instead; "" for any other error.

    >>> _keras_variable_watched("Passed in object <Variable path=d/kernel, shape=(2,), value=[1 2]> "
    ...     "of type 'Variable', not tf.Tensor or tf.Variable or ExtensionType.")[:60]
    "ValueError: tape.watch was handed Keras variable 'd/kernel',"
    """
    m = _KERAS_WATCHED.search(text)
    if m is None:
        return ""
    return (
        f"ValueError: tape.watch was handed Keras variable '{m.group(1)}', which is not a"
        " tf.Variable (Keras 3): watch the tf.Variable it holds, [v.value for v in"
        " model.trainable_variables]"
    )


_ANSI = re.compile(r"(\x1b)?\[[0-9;]*m")
_KERAS_CALL = re.compile(r"Exception encountered when calling (?:layer )?['\"]?([\w.]+?\(\))?['\"]?[^.]*\.$")


def _first_line(exc: BaseException) -> str:
    """The line that says what went wrong, without the wrappers around it.

    tf.function wraps the real error in an "in user code:" traceback, and
    Keras wraps a layer's error in "Exception encountered when calling ..."
    plus a dump of the call's arguments; neither says what is wrong.

    >>> _first_line(ValueError("in user code:\\n  File x\\n    y = dense(x)\\n\\n    InvalidArgumentError: "
    ...     "Exception encountered when calling Dense.call().\\n\\n    \\x1b[1m{{function_node "
    ...     "__wrapped__MatMul}} In[0] and In[1] has different ndims [Op:MatMul] name: \\x1b[0m\\n\\n"
    ...     "    Arguments received by Dense.call():\\n      \\u2022 training=True"))
    'InvalidArgumentError: In[0] and In[1] has different ndims [Op:MatMul] (in Dense.call())'
    """
    text = _ANSI.sub("", str(exc))
    cut = text.find("Arguments received by")
    if cut >= 0:
        text = text[:cut]
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if lines and lines[0].startswith("in user code:"):
        # tf.function wraps the real error: it follows the last traceback entry.
        # (each entry is a File line and the line of code it names).
        last = max((i for i, ln in enumerate(lines) if ln.startswith("File ")), default=-1)
        lines = (lines[last + 2 :] if last >= 0 else lines[1:]) or lines[-1:]
    head, where = "", ""
    out: list[str] = []
    for ln in lines:
        m = re.match(r"^(\w+(?:Error|Exception)): (.*)$", ln)
        if m and _KERAS_CALL.search(m.group(2)):
            head, where = m.group(1), _KERAS_CALL.search(m.group(2)).group(1) or ""  # type: ignore[union-attr]
            continue
        call = _KERAS_CALL.search(ln)
        if call:
            where = call.group(1) or where
            continue
        ln = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", ln)
        ln = re.sub(r"\s*name:\s*$", "", ln).strip()
        if ln:
            out.append(ln)
    if not out:
        return lines[0] if lines else ""
    first = out[0]
    if head and not first.startswith(head):
        first = f"{head}: {first}"
    return f"{first} (in {where})" if where else first


def _autograph_source(exc: BaseException) -> Source | None:
    """The user's line named in a tf.function error's "in user code:" block."""
    text = str(exc)
    if "in user code:" not in text:
        return None
    from tfviz.report import Source
    from tfviz.script.sourcemap import is_user_file

    hits = [(f, int(n)) for f, n in re.findall(r'File "([^"]+)", line (\d+)', text) if is_user_file(f)]
    if not hits:
        return None
    f, n = hits[-1]
    return Source(f, n, code_at(f, n))
