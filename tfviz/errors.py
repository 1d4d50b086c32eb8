"""Errors that reach the user as a message, never as our own traceback."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Says an error's line by its notebook cell (:func:`tfviz.script.notebook.name_cells`),
#: installed when that module is imported: before, no notebook is known. Set from below,
#: so that this module imports nothing of tfviz.
_name_cells: Callable[[AnalysisError], None] | None = None


def said_by_cells(namer: Callable[[AnalysisError], None]) -> None:
    """Have every :class:`AnalysisError` name a notebook's lines by cell with ``namer``."""
    global _name_cells
    _name_cells = namer


@dataclass
class AnalysisError(Exception):
    """The analysis could not run; ``file``/``line`` point into the user's code."""

    message: str
    file: str | None = None
    line: int | None = None
    code: str = ""
    detail: str = ""
    candidates: tuple[str, ...] = ()
    #: in a notebook: the cell's index, the line within it, the cell as a user names it
    cell: int | None = None
    cell_line: int | None = None
    cell_name: str = ""

    def __post_init__(self) -> None:
        if not self.code and self.file and self.line:  # the line itself, wherever one is named
            import linecache

            self.code = linecache.getline(self.file, self.line).strip()

    def in_cells(self) -> None:
        """A line of a notebook said by its cell (``train.ipynb cell 6 [5], line 2``),
        in the message and in ``cell``/``cell_line``; nothing for a script."""
        if _name_cells is not None and not self.cell_name:
            _name_cells(self)

    def __str__(self) -> str:
        self.in_cells()
        line = f" {self.cell_name}, line {self.cell_line}" if self.cell_name else f":{self.line}"
        where = f"{self.file}{line}: " if self.file and self.line else (f"{self.file}: " if self.file else "")
        text = f"{where}{self.message}"
        if self.code:
            text += f"\n    {self.code}"
        if self.detail:
            text += f"\n{self.detail}"
        return text

    @classmethod
    def from_dict(cls, error: dict[str, Any], script: str | None = None) -> AnalysisError:
        """The error a worker sent as :meth:`to_dict`; one that names no place is ``script``'s.

        >>> str(AnalysisError.from_dict({"message": "no gradient step", "candidates": ["loss"]}, "t.py"))
        't.py: no gradient step'
        """
        fields = {k: v for k, v in error.items() if k in ("message", "file", "line", "code", "detail")}
        if script is not None and not fields.get("file") and not fields.get("line"):
            fields["file"] = script
        return cls(**fields, candidates=tuple(error.get("candidates") or ()))

    def to_dict(self) -> dict[str, Any]:
        self.in_cells()
        return {
            "cell": self.cell,
            "cell_line": self.cell_line,
            "cell_name": self.cell_name,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "code": self.code,
            "detail": self.detail,
            "candidates": list(self.candidates),
        }
