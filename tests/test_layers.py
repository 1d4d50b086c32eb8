"""The library's shape: every module of ``tfviz`` is in the layers contract that
``lint-imports`` (``make lint``) holds, so a new module cannot sit outside it unseen, and
the contract names no module that is gone."""

from __future__ import annotations

import re

import tomllib

from tests.conftest import ROOT


def _layered() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c["type"] == "layers" and "tfviz.commands" in str(c["layers"])]
    return {name.strip() for layer in layers["layers"] for name in re.split(r"[|:]", layer)}


def _modules() -> set[str]:
    """tfviz's top-level modules and subpackages."""
    package = ROOT / "tfviz"
    found = {f"tfviz.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    return found | {f"tfviz.{p.name}" for p in package.iterdir() if (p / "__init__.py").is_file()}


def test_every_module_of_the_library_is_in_a_layer():
    layered, modules = _layered(), _modules()
    assert modules - layered == set(), "put these in the layers contract in pyproject.toml"
    assert layered - modules == set(), "the layers contract names modules that are gone"
    assert {"tfviz.commands", "tfviz.errors", "tfviz.cli", "tfviz.vocabulary"} <= layered


def test_no_two_modules_import_each_other():
    """A pair of modules that import each other (for types too) is one module in two files:
    ``errors`` and ``script.notebook``, ``program.hooks`` and ``program.readouts``,
    ``structure.hierarchy`` and ``structure.naming``, ``app.graph.framing`` and
    ``app.graph.view`` were; none is now."""
    import sys

    import grimp

    sys.path.insert(0, str(ROOT))  # the app's package as the repository holds it
    graph = grimp.build_graph("tfviz", "app")
    both = sorted(
        (a, b)
        for a in graph.modules
        for b in graph.find_modules_directly_imported_by(a)
        if a < b and a in graph.find_modules_directly_imported_by(b)
    )
    assert both == []


def test_the_slow_files_exist():
    """``make test-quick`` leaves out the files in ``SLOW_FILES``: a name there that no
    longer matches a file would leave a slow file in the quick loop unseen."""
    from tests.conftest import SLOW_FILES

    assert SLOW_FILES and all((ROOT / "tests" / name).is_file() for name in SLOW_FILES)
