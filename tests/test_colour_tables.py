"""Colours live in two tables: the gradient statuses in :mod:`tfviz.palette` (shared by the
window and every export) and the window's own in :mod:`app.theme`. A colour written anywhere
else is one a change of look would miss."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

HEX = re.compile(r"#[0-9A-Fa-f]{6}\b")
TABLES = {ROOT / "tfviz" / "palette.py", ROOT / "app" / "theme.py", ROOT / "app" / "graph" / "palette.py"}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def colour_literals(path: Path) -> list[str]:
    """Each string in ``path``'s code (not its docstrings) that holds a hex colour, as file:line.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "m.py"
    >>> _ = p.write_text("'''Ink is #303030.'''\\nINK = '#303030'\\nCSS = f'color: {INK}'\\n")
    >>> [hit.rsplit(":", 1)[1] for hit in colour_literals(p)]
    ['2']
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    return [
        f"{path}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and HEX.search(node.value)
    ]


def test_no_colour_is_written_outside_the_two_tables() -> None:
    found = [
        hit
        for pkg in ("tfviz", "app")
        for path in sorted((ROOT / pkg).rglob("*.py"))
        if path not in TABLES
        for hit in colour_literals(path)
    ]
    assert not found, f"colours outside tfviz/palette.py and app/theme.py: {found}"


def test_the_tables_hold_colours() -> None:
    # the scan above finds nothing only because colours are somewhere: in the tables
    assert all(colour_literals(t) for t in TABLES)
