"""Where the bundled example scripts are, installed or in a checkout.

They install as the package ``tfviz.examples`` (see ``pyproject.toml``), so
``importlib.resources`` finds them in a wheel and in an editable install alike; a checkout
run without installing falls back to its ``resources/examples`` folder.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent / "resources" / "examples"
_KINDS = (".py", ".ipynb")


def examples_dir() -> Path | None:
    """The folder that holds the examples, or None when neither place has it."""
    try:
        found = Path(str(importlib.resources.files("tfviz.examples")))
    except (ModuleNotFoundError, TypeError):
        found = _CHECKOUT
    return found if found.is_dir() else (_CHECKOUT if _CHECKOUT.is_dir() else None)


def examples() -> list[Path]:
    """The example programs, sorted by name (the package's own ``__init__.py`` is not one).

    >>> any(p.name == "seed3_chain_rule.py" for p in examples())
    True
    >>> any(p.name == "__init__.py" for p in examples())
    False
    """
    folder = examples_dir()
    if folder is None:
        return []
    return sorted(
        p for p in folder.iterdir() if p.suffix in _KINDS and p.is_file() and not p.name.startswith("_")
    )
