"""The JSON Schemas of tfviz's documents, shipped with it: ``tfviz-analysis.schema.json`` (a
saved analysis, ``tfviz export -o FILE.json``) and ``tfviz-check.schema.json`` (``tfviz check
--json``), which refers to the first for variables and problems.

>>> load("check")["title"]
'tfviz check --json'
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

NAMES = ("analysis", "check")


def text(name: str) -> str:
    """The schema ``name`` (one of :data:`NAMES`) as it is shipped."""
    if name not in NAMES:
        raise ValueError(f"no schema {name!r}: tfviz ships {', '.join(NAMES)}")
    return files(__name__).joinpath(f"tfviz-{name}.schema.json").read_text(encoding="utf-8")


def load(name: str) -> dict[str, Any]:
    """The schema ``name``, parsed."""
    schema: dict[str, Any] = json.loads(text(name))
    return schema
