"""How paths appear on screen: relative to the opened script's folder, never absolute.

Absolute paths leak the user's machine layout into screenshots and are mostly
noise; the file name (or a path relative to the script's folder) is what the
user recognises. Full paths go into tooltips only.
"""

from __future__ import annotations

import os

from tfviz.report import Report, Source


def short_path(path: str | None, base_dir: str | None = None) -> str:
    """``path`` relative to ``base_dir`` when it lies below it, else its last two parts.

    >>> short_path("/home/u/proj/model.py", "/home/u/proj")
    'model.py'
    >>> short_path("/home/u/proj/lib/util.py", "/home/u/proj")
    'lib/util.py'
    >>> short_path("/usr/lib/python3/site-packages/keras/layer.py", "/home/u/proj")
    '…/keras/layer.py'
    """
    if not path:
        return ""
    if not os.path.isabs(path):
        return path
    if base_dir:
        rel = os.path.relpath(path, base_dir)
        if not rel.startswith(".."):
            return rel
    parts = path.rstrip("/").split("/")
    return "…/" + "/".join(parts[-2:]) if len(parts) > 2 else path


def location(
    path: str | None,
    line: int | None,
    base_dir: str | None = None,
    cell: str = "",
    cell_line: int | None = None,
) -> str:
    """``file.py:21`` for a source location, relative as in :func:`short_path`; in a
    notebook, ``train.ipynb cell 6 [5], line 2`` (``cell``: the cell as a user names it).

    >>> location("/p/train.ipynb", 68, "/p", "cell 6 [5]", 2)
    'train.ipynb cell 6 [5], line 2'
    """
    s = short_path(path, base_dir)
    if s and cell and cell_line:
        return f"{s} {cell}, line {cell_line}"
    return f"{s}:{line}" if s and line else s


def source_location(src: Source, base_dir: str | None = None) -> str:
    """:func:`location` of a report's ``Source``."""
    return location(src.file, src.line, base_dir, src.cell_name, src.cell_line)


def summary(report: Report) -> str:
    """The status bar's verdict: "2 problems, 1/3 variables without gradient, 1 with a zero gradient".

    A zero gradient is a warning: it flows, but not at these values, so it is never "all flow".
    A vanishing or exploding one flows, at a size that cannot train: said after "all flow"."""
    sized = {m: sum(v.magnitude == m for v in report.variables) for m in ("vanishing", "exploding")}
    n = sum(p.kind not in sized and p.severity != "info" for p in report.problems)
    bad = sum(v.status != "connected" for v in report.variables)
    zero = sum(v.status == "connected" and v.kind == "zero" for v in report.variables)
    if not n and not bad:
        verbs = {"vanishing": "vanish", "exploding": "explode"}
        said = [f"{k} {verbs[m]}" for m, k in sized.items() if k]
        return "all gradients flow" + (f", but {' and '.join(said)}" if said else "")
    parts = [f"{n} problem{'s' * (n != 1)}", f"{bad}/{len(report.variables)} variables without gradient"]
    if zero:
        parts.append(f"{zero} with a zero gradient")
    parts += [f"{k} {m}" for m, k in sized.items() if k]
    return ", ".join(parts)


def shape_text(s) -> str:
    """A variable's shape as Python writes it, ``?`` for an unknown size: ``(3, ?, 8)``."""
    return "?" if s is None else "(" + ", ".join("?" if d is None else str(d) for d in s) + ")"


def norm_text(g) -> str:
    """A gradient norm in three significant digits, ``—`` when none was measured."""
    return "—" if g is None else f"{g:.3g}"
