"""A Jupyter notebook read as the one program its code cells make, top to bottom.

The code cells are joined into one script, line for line, so everything that reads a
script (compiling it, running it, naming a line of it) reads the notebook unchanged;
only where a line is *shown* is its script line turned back into its cell and the line
within that cell (``cell 7 [5], line 3``: the cell's position, its execution count).

IPython syntax is not Python, and what is Python is decided by IPython's own input
transformer, as Jupyter decides it (:func:`_python_lines`): a line magic
(``%matplotlib inline``) or a shell line (``!pip install ...``) becomes ``pass`` at its
indentation, a cell magic that times or captures its cell (``%%time``) runs the rest, and a
cell that is not Python at all (``%%bash``, ``%%writefile``, after any blank lines) is left
out; each is noted, so the report says what did not run. Saved outputs are never read.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, cast

from tfviz.errors import AnalysisError, said_by_cells

SUFFIX = ".ipynb"
#: cell magics whose cell is still Python: their first line is dropped, the rest runs
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}


@dataclass
class Cell:
    """A code cell's place in the joined script (``first``, ``last``: 1-based lines)."""

    index: int  # its position among all the notebook's cells, 0-based
    execution_count: int | None
    first: int
    last: int

    def name(self) -> str:
        """``cell 7 [5]``: its position, 1-based as a user counts, and its execution count."""
        return f"cell {self.index + 1}" + (f" [{self.execution_count}]" if self.execution_count else "")


@dataclass
class Notebook:
    path: str
    source: str
    cells: list[Cell] = field(default_factory=list)
    #: (cell index, line in the cell, the line) of IPython syntax that did not run as written
    skipped: list[tuple[int, int, str]] = field(default_factory=list)
    #: the saved execution counts are not in cell order: the notebook was run out of order
    out_of_order: bool = False

    def cell_at(self, line: int) -> Cell | None:
        return next((c for c in self.cells if c.first <= line <= c.last), None)

    def where(self, line: int) -> str:
        """``cell 7 [5], line 3`` for a line of the joined script; ``line N`` outside any cell.

        >>> nb = join("nb.ipynb", [_cell("import tensorflow as tf"), _cell("x = 1\\ny = x", 4)])
        >>> nb.where(3)
        'cell 2 [4], line 2'
        """
        cell = self.cell_at(line)
        return f"{cell.name()}, line {line - cell.first + 1}" if cell else f"line {line}"

    def notes(self) -> list[str]:
        """What the report says about running the notebook as a script."""
        out = [
            f"{os.path.basename(self.path)} {self.cells_by_index[i].name()}, line {ln}: skipped"
            f" IPython syntax `{text.strip()}`"
            for i, ln, text in self.skipped
        ]
        if self.out_of_order:
            out.append(
                f"{os.path.basename(self.path)} was last run out of order (by its execution"
                " counts); tfviz runs its cells top to bottom"
            )
        return out

    @property
    def cells_by_index(self) -> dict[int, Cell]:
        return {c.index: c for c in self.cells}


def display(*objs: Any, **_kwargs: Any) -> None:
    """IPython's ``display()``, which a notebook calls as a builtin: printed, as a script would."""
    print(*objs)


def namespace(path: str) -> dict[str, Any]:
    """What a notebook's code finds defined that a script's does not (``display``)."""
    return {"display": display} if is_notebook(path) else {}


def is_notebook(path: str | None) -> bool:
    return bool(path) and str(path).lower().endswith(SUFFIX)


def _cell(source: str, count: int | None = None) -> dict[str, Any]:
    return {"cell_type": "code", "source": source, "execution_count": count}


def _transformer() -> Any:
    """IPython's own input transformer: what Jupyter makes of a cell before Python runs it."""
    global _TRANSFORMER
    if _TRANSFORMER is None:
        from IPython.core.inputtransformer2 import TransformerManager

        _TRANSFORMER = TransformerManager()  # type: ignore[no-untyped-call]  # IPython is untyped here
    return _TRANSFORMER


_TRANSFORMER: Any = None


#: The fast path: a cell with none of what IPython's transformer acts on is Python as it is.
#: Its slow twin, the transformer on every cell, is what tests/test_notebook.py compares it with.
FAST_PLAIN_CELLS = True
#: what IPython's transforms start from: magics, shell lines, help, pasted prompts
_IPYTHON_MARKS = ("%", "!", "?")
_PROMPTS = (">>>", "...", "In [", "In[")


def _plainly_python(lines: list[str]) -> bool:
    """No line holds a character or starts with a prompt that any IPython transform reads.

    >>> _plainly_python(["x = 1", "def f():", "    return x"]), _plainly_python(["x != 1"])
    (True, False)
    """
    return not any(
        any(mark in line for mark in _IPYTHON_MARKS) or line.lstrip().startswith(_PROMPTS) for line in lines
    )


def _cell_magic(transformed: str) -> str | None:
    """The magic's name where IPython made the whole cell one ``run_cell_magic`` call."""
    import ast

    if not transformed.lstrip().startswith("get_ipython().run_cell_magic("):
        return None
    try:
        call = ast.parse(transformed).body[0].value  # type: ignore[attr-defined]
        name = call.args[0].value
    except (SyntaxError, IndexError, AttributeError):
        return None
    return name if isinstance(name, str) else None


def _python_lines(
    index: int, lines: list[str], skipped: list[tuple[int, int, str]], offset: int = 0
) -> list[str]:
    """A cell's lines as Python, line for line, as IPython's transformer decides: a cell magic
    (after any blank lines) runs its body as Python only for the magics that time or capture
    it, and is left out otherwise (``%%writefile``, ``%%bash``); a line IPython turns into a
    call of its own (a line magic, ``!cmd``, ``x = %time f()``, ``obj?``) becomes ``pass`` at
    its indentation (the lines it continues onto, blank); a line IPython rewrites into plain
    Python (a pasted ``>>>`` prompt) runs as IPython rewrote it. Each IPython line is noted
    (``offset``: where ``lines`` start in the cell)."""
    import difflib

    text = "\n".join(lines)
    if FAST_PLAIN_CELLS and _plainly_python(lines):
        return list(lines)  # nothing IPython would touch: its transformer is skipped
    transformed = _transformer().transform_cell(text)
    magic = _cell_magic(transformed)
    if magic is not None:
        at = next((i for i, line in enumerate(lines) if line.strip()), 0)
        skipped.append((index, offset + at + 1, lines[at].strip()))
        if magic not in _PYTHON_CELL_MAGICS:  # %%bash, %%writefile, %%html: not Python
            return [""] * len(lines)
        body = _python_lines(index, lines[at + 1 :], skipped, offset + at + 1)
        return [""] * (at + 1) + body
    new = transformed.split("\n")
    if transformed.endswith("\n") and not text.endswith("\n"):
        new = new[:-1]  # the newline IPython adds to every cell
    out = list(lines)
    matcher = difflib.SequenceMatcher(a=lines, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or i1 == i2:
            continue
        rewritten = new[j1:j2]
        if i2 - i1 == j2 - j1 and not any("get_ipython()" in line for line in rewritten):
            out[i1:i2] = rewritten  # IPython's rewrite is plain Python: it runs as rewritten
            continue
        for k in range(i1, i2):
            if not lines[k].strip():
                out[k] = ""
                continue
            indent = re.match(r"\s*", lines[k]).group(0)  # type: ignore[union-attr]  # always matches
            continued = k > i1 and lines[k - 1].rstrip().endswith("\\")
            out[k] = "" if continued else f"{indent}pass  # skipped by tfviz: IPython syntax"
            if not continued:
                skipped.append((index, offset + k + 1, lines[k]))
    return out


def join(path: str, cells: list[dict[str, Any]]) -> Notebook:
    """The notebook's code cells as one script, and where each cell sits in it.

    >>> nb = join("nb.ipynb", [_cell("%matplotlib inline\\nimport numpy as np", 1),
    ...                        {"cell_type": "markdown", "source": "# Title"},
    ...                        _cell("!pip install x\\nif True:\\n    %time f()", 2)])
    >>> print(nb.source)
    pass  # skipped by tfviz: IPython syntax
    import numpy as np
    pass  # skipped by tfviz: IPython syntax
    if True:
        pass  # skipped by tfviz: IPython syntax
    >>> [(c.index, c.first, c.last) for c in nb.cells], nb.where(5)
    ([(0, 1, 2), (2, 3, 5)], 'cell 3 [2], line 3')
    """
    lines: list[str] = []
    nb = Notebook(path, "")
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        text = cell.get("source") or ""
        text = "".join(text) if isinstance(text, list) else str(text)
        body = _python_lines(index, text.split("\n") if text else [""], nb.skipped)
        count = cell.get("execution_count")
        nb.cells.append(
            Cell(index, count if isinstance(count, int) else None, len(lines) + 1, len(lines) + len(body))
        )
        lines.extend(body)
    counts = [c.execution_count for c in nb.cells if c.execution_count is not None]
    nb.out_of_order = counts != sorted(counts)
    nb.source = "\n".join(lines) + "\n"
    return nb


_read: dict[str, Notebook] = {}


def read(path: str) -> Notebook:
    """Read a notebook with nbformat; its joined script stands in for the file wherever
    Python reads source lines (``linecache``: tracebacks, the report's code lines)."""
    import nbformat

    path = os.path.abspath(path)
    try:
        with warnings.catch_warnings():
            # nbformat 4.5 notebooks saved without cell ids: nbformat adds them and says so on
            # stderr, every time; that is not the user's output, nor a problem of theirs
            warnings.simplefilter("ignore")
            doc = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]  # nbformat is untyped
    except Exception as exc:  # noqa: BLE001 - nbformat raises many kinds for a bad file
        raise AnalysisError(f"not a Jupyter notebook nbformat can read: {exc}", file=path) from None
    nb = join(path, list(doc.get("cells", [])))
    _read[path] = nb
    _hold_lines(path, nb)
    if not getattr(linecache.updatecache, "holds_notebooks", False):
        linecache.updatecache = _updatecache_holding_notebooks(linecache.updatecache)
    return nb


def _hold_lines(path: str, nb: Notebook) -> list[str]:
    lines = nb.source.splitlines(keepends=True)
    linecache.cache[path] = (len(nb.source), None, lines, path)  # no mtime: never re-read
    return lines


def _updatecache_holding_notebooks(original: Any) -> Any:
    """``linecache.updatecache`` that gives a notebook read here its joined script, not its
    JSON from disk: AutoGraph calls it for the file of each function it converts (a notebook's
    ``tf.function`` step, a traced target), and every code line read after, in the report and
    in the analysis's own reading of the script, was the notebook's JSON."""

    def holding(filename: str, module_globals: Any = None) -> list[str]:
        nb = _read.get(filename)
        if nb is not None:
            return _hold_lines(filename, nb)
        return cast("list[str]", original(filename, module_globals))

    setattr(holding, "holds_notebooks", True)  # noqa: B010 - marks the wrapper, installed once
    return holding


def known(path: str | None) -> Notebook | None:
    """The notebook read at ``path`` in this process, if any."""
    return _read.get(os.path.abspath(path)) if is_notebook(path) and path else None


def name_cells(err: AnalysisError) -> None:
    """``err``'s line said by its cell where its file is a known notebook: in its message
    and detail, and in ``cell``/``cell_line``/``cell_name``."""
    nb = known(err.file)
    if nb is None:
        return
    err.message, err.detail = in_cells(err.message, nb), in_cells(err.detail, nb)
    cell = nb.cell_at(err.line) if err.line else None
    if cell is not None and err.line:
        err.cell, err.cell_line, err.cell_name = cell.index, err.line - cell.first + 1, cell.name()


def in_cells(text: str, nb: Notebook) -> str:
    """``train.ipynb:68`` in a message, said as ``train.ipynb cell 6 [5], line 2``.

    >>> nb = join("/x/train.ipynb", [_cell("a = 1"), _cell("b = 2\\nc = 3", 5)])
    >>> in_cells("made at train.ipynb:3; see /x/train.ipynb:1", nb)
    'made at train.ipynb cell 2 [5], line 2; see /x/train.ipynb cell 1, line 1'
    >>> in_cells('File "/x/train.ipynb", line 3, in <module>', nb)
    'File "/x/train.ipynb", cell 2 [5], line 2, in <module>'
    """
    base = re.escape(os.path.basename(nb.path))
    text = re.sub(rf"({base}):(\d+)\b", lambda m: f"{m.group(1)} {nb.where(int(m.group(2)))}", text)
    # a traceback's ``File ".../train.ipynb", line 68``
    return re.sub(rf'({base}", )line (\d+)\b', lambda m: f"{m.group(1)}{nb.where(int(m.group(2)))}", text)


def place(obj: Any, path: str) -> None:
    """Say every place in a report (or any dataclass tree) that points into the notebook at
    ``path`` by its cell: each ``Source`` gets ``cell``, ``cell_line`` and ``cell_name``, and
    each ``notebook.ipynb:68`` in a text field becomes ``notebook.ipynb cell 6 [5], line 2``."""
    nb = known(path)
    if nb is None:
        return

    def source(x: Any) -> None:
        if x.file == nb.path and x.line:
            cell = nb.cell_at(x.line)
            if cell is not None:
                x.cell, x.cell_line, x.cell_name = cell.index, x.line - cell.first + 1, cell.name()

    _each_place(obj, source, lambda text: in_cells(text, nb) if SUFFIX in text else text)


def _session_compiler() -> Any:
    """The compiler of the IPython session this process runs, if it runs one: it names each
    cell's code (``compile.format_code_name``) and knows every cell it compiled."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "compile", None)


def session_cells(path: str) -> list[str] | None:
    """The files of every cell the running IPython session compiled, in the order they ran,
    where ``path`` is one of them (a function defined in a notebook's cell); else None."""
    compiled = getattr(_session_compiler(), "_filename_map", None)
    if not isinstance(compiled, dict) or path not in compiled:
        return None
    return sorted(compiled, key=lambda file: compiled[file] or 0)


def place_in_session(obj: Any) -> None:
    """Say every place in a report that points into a cell of the IPython session this process
    runs (a check in the caller's process, from a notebook) as IPython's tracebacks say it:
    ``Cell In[5], line 2``. Such a cell's code has a file name of IPython's making, which names
    nothing the user sees. Its label is IPython's own (``compile.format_code_name``). The
    report's ``script``, the file of the function checked, becomes its cell's name too."""
    compiler = _session_compiler()
    compiled = getattr(compiler, "_filename_map", None)
    name_of = getattr(compiler, "format_code_name", None)
    if not isinstance(compiled, dict) or name_of is None:
        return
    names: dict[str, str] = {}
    for file in compiled:
        try:
            label = name_of(file)
        except Exception:  # noqa: BLE001 - IPython's naming is a courtesy, not needed
            label = None
        if label:
            names[file] = f"{label[0]} {label[1]}"
    by_base = {os.path.basename(file): cell for file, cell in names.items()}

    def source(x: Any) -> None:
        cell = names.get(x.file) if x.line else None
        if cell is not None:
            x.cell, x.cell_line, x.cell_name = None, x.line, cell

    _each_place(obj, source, lambda said: _cell_lines(said, by_base) if ":" in said else said)
    script = getattr(obj, "script", None)
    if isinstance(script, str) and script in names:  # the report's own head: the target's cell
        obj.script = names[script]


_PLACE = re.compile(r"(?:[^\s:()]*/)?([^\s/:()]+):(\d+)\b")


def _cell_lines(text: str, cells: dict[str, str]) -> str:
    """``2851611981.py:2`` (a cell's file, as IPython names it; ``cells`` by base name) said as
    ``Cell In[2], line 2``.

    >>> _cell_lines("made at 285.py:2; at /tmp/ipykernel_7/285.py:4 (x.py:3)", {"285.py": "Cell In[2]"})
    'made at Cell In[2], line 2; at Cell In[2], line 4 (x.py:3)'
    """
    return _PLACE.sub(lambda m: f"{cells[m[1]]}, line {m[2]}" if m[1] in cells else m[0], text)


def _each_place(obj: Any, source: Any, text: Any) -> None:
    """Hand each ``Source`` in a dataclass tree to ``source``, and put each text field through
    ``text``; paths (``script``, ``file``) stay paths."""
    seen: set[int] = set()

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            return text(x)
        if id(x) in seen:
            return x
        seen.add(id(x))
        if isinstance(x, list):
            x[:] = [walk(item) for item in x]
            return x
        if not hasattr(x, "__dataclass_fields__"):
            return x
        if hasattr(x, "cell_line") and hasattr(x, "file"):
            source(x)
        for name in x.__dataclass_fields__:
            if name in ("script", "file"):  # paths stay paths
                continue
            setattr(x, name, walk(getattr(x, name)))
        return x

    walk(obj)


said_by_cells(name_cells)  # every AnalysisError from now on names a known notebook's lines by cell
