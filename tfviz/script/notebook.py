"""A Jupyter notebook read as the one program its code cells make, top to bottom.

The code cells are joined into one script, line for line, so everything that reads a
script (compiling it, running it, naming a line of it) reads the notebook unchanged;
only where a line is *shown* is its script line turned back into its cell and the line
within that cell (``cell 7 [5], line 3``: the cell's position, its execution count).

IPython syntax is not Python: a line magic (``%matplotlib inline``) or a shell line
(``!pip install ...``) becomes ``pass`` at its indentation, a cell magic (``%%time``)
drops its first line, and a cell that is not Python at all (``%%bash``) is left out;
each is noted, so the report says what did not run. Saved outputs are never read.
"""

from __future__ import annotations

import linecache
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from tfviz.errors import AnalysisError

SUFFIX = ".ipynb"
#: cell magics whose cell is still Python: their first line is dropped, the rest runs
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
_MAGIC = re.compile(r"^(\s*)(%|!)")
#: ``files = !ls`` and ``t = %timeit f()``: a value from IPython syntax
_ASSIGNED_MAGIC = re.compile(r"^(\s*)[\w.,\s\[\]()]+=\s*[%!]")
#: ``model?`` and ``?model``: IPython help
_HELP = re.compile(r"^\s*(\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*$")


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


def _python_lines(index: int, lines: list[str], skipped: list[tuple[int, int, str]]) -> list[str]:
    """A cell's lines as Python: IPython syntax replaced, line for line, and noted."""
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        magic = first[2:].split()[0] if len(first) > 2 else ""
        skipped.append((index, 1, first))
        if magic not in _PYTHON_CELL_MAGICS:  # %%bash, %%writefile, %%html: not Python
            return [""] * len(lines)
        lines = ["", *lines[1:]]
    out = []
    for n, line in enumerate(lines, 1):
        m = _MAGIC.match(line) or _ASSIGNED_MAGIC.match(line)
        if m or _HELP.match(line):
            indent = re.match(r"\s*", line).group(0)  # type: ignore[union-attr]  # always matches
            skipped.append((index, n, line))
            out.append(f"{indent}pass  # skipped by tfviz: IPython syntax")
        else:
            out.append(line)
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
    lines = nb.source.splitlines(keepends=True)
    linecache.cache[path] = (len(nb.source), None, lines, path)  # no mtime: never re-read
    _read[path] = nb
    return nb


def known(path: str | None) -> Notebook | None:
    """The notebook read at ``path`` in this process, if any."""
    return _read.get(os.path.abspath(path)) if is_notebook(path) and path else None


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
    seen: set[int] = set()

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            return in_cells(x, nb) if SUFFIX in x else x
        if id(x) in seen:
            return x
        seen.add(id(x))
        if isinstance(x, list):
            x[:] = [walk(item) for item in x]
            return x
        if not hasattr(x, "__dataclass_fields__"):
            return x
        if hasattr(x, "cell_line") and getattr(x, "file", None) == nb.path and getattr(x, "line", 0):
            cell = nb.cell_at(x.line)
            if cell is not None:
                x.cell, x.cell_line, x.cell_name = cell.index, x.line - cell.first + 1, cell.name()
        for name in x.__dataclass_fields__:
            if name in ("script", "file"):  # paths stay paths
                continue
            setattr(x, name, walk(getattr(x, name)))
        return x

    walk(obj)
