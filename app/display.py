"""How paths appear on screen: relative to the opened script's folder, never absolute.

Absolute paths leak the user's machine layout into screenshots and are mostly
noise; the file name (or a path relative to the script's folder) is what the
user recognises. Full paths go into tooltips only.
"""

from __future__ import annotations

import os


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


def location(path: str | None, line: int | None, base_dir: str | None = None) -> str:
    """``file.py:21`` for a source location, relative as in :func:`short_path`."""
    s = short_path(path, base_dir)
    return f"{s}:{line}" if s and line else s
