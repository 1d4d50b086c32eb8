"""Errors that reach the user as a message, never as our own traceback."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class AnalysisError(Exception):
    """The analysis could not run; ``file``/``line`` point into the user's code."""

    message: str
    file: str | None = None
    line: int | None = None
    code: str = ""
    detail: str = ""
    candidates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.code and self.file and self.line:  # the line itself, wherever one is named
            import linecache

            self.code = linecache.getline(self.file, self.line).strip()

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: " if self.file and self.line else (
            f"{self.file}: " if self.file else ""
        )
        text = f"{where}{self.message}"
        if self.code:
            text += f"\n    {self.code}"
        if self.detail:
            text += f"\n{self.detail}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "code": self.code,
            "detail": self.detail,
            "candidates": list(self.candidates),
        }
