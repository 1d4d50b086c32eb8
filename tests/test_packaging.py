"""The wheel as a user gets it: built from the sources, installed into a folder of its own,
and run from there, away from the checkout.

The GUI's folder is ``app/`` but it installs as ``tfviz_app`` (a top-level ``app`` would
collide with other projects'), and the examples install as ``tfviz.examples``, so the start
page and ``tfviz check`` find them after a ``pip install``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

from tests.conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def test_the_package_list_is_the_tree():
    """Every folder with an ``__init__.py`` under ``tfviz/`` and ``app/`` is listed (a new
    subpackage left out would be missing from the wheel), under its installed name."""
    dirs = {"tfviz_app": "app", **{k: v for k, v in SETUPTOOLS["package-dir"].items()}}
    found = set()
    for top, name in (("tfviz", "tfviz"), ("app", "tfviz_app")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((name, *rel)))
    listed = set(SETUPTOOLS["packages"])
    assert found | {"tfviz.examples"} == listed
    assert dirs["tfviz_app"] == "app" and dirs["tfviz.examples"] == "resources/examples"
    assert PYPROJECT["project"]["scripts"]["tfviz"] == "tfviz_app.launch:main"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the sources (the build leaves nothing in the checkout)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("tfviz", "app", "resources", "pyproject.toml", "README.md", "LICENSE"):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(
            ROOT / name,
            src / name,
            **({"ignore": shutil.ignore_patterns("__pycache__")} if (ROOT / name).is_dir() else {}),
        )
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    (whl,) = out.glob("tfviz-*.whl")
    return whl


def test_the_wheel_has_no_top_level_app_and_carries_the_examples(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if "/" in n}
    assert "app" not in tops and {"tfviz", "tfviz_app"} <= tops, sorted(tops)
    assert "tfviz_app/window.py" in names and "tfviz_app/graph/layout/columns.py" in names
    examples = {n.removeprefix("tfviz/examples/") for n in names if n.startswith("tfviz/examples/")}
    on_disk = {p.name for p in (ROOT / "resources" / "examples").iterdir() if p.is_file()}
    assert on_disk <= examples, sorted(on_disk - examples)  # the notebook too
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "tfviz = tfviz_app.launch:main" in zipfile.ZipFile(wheel).read(entry).decode()
    # typed, with the API's types, and the schemas of its documents beside the code
    assert {"tfviz/py.typed", "tfviz/__init__.pyi", "tfviz/__main__.py"} <= set(names)
    assert {"tfviz/schemas/tfviz-analysis.schema.json", "tfviz/schemas/tfviz-check.schema.json"} <= set(names)


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The wheel installed into a folder of its own (its dependencies are this Python's), and an
    environment whose imports come from there first."""
    target = tmp_path_factory.mktemp("site")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    env = dict(os.environ, PYTHONPATH=str(target), QT_QPA_PLATFORM="offscreen")
    return target, env


def test_the_installed_command_checks_a_bundled_example_and_exports_it(installed, tmp_path: Path):
    target, env = installed
    example = target / "tfviz" / "examples" / "kind_integer.py"
    tfviz = target / "bin" / "tfviz"
    assert example.is_file() and tfviz.is_file()
    r = subprocess.run(
        [str(tfviz), "check", str(example)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 1, r.stdout + r.stderr[-2000:]
    # the example's own line is named though it sits in site-packages-like tfviz/examples
    assert "kind_integer.py:" in r.stdout and "integer" in r.stdout, r.stdout
    out = tmp_path / "g.json"
    r = subprocess.run(
        [str(tfviz), "export", str(example), "-o", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode in (0, 1) and out.stat().st_size > 0, r.stderr[-2000:]


def test_the_installed_start_page_lists_the_examples_from_the_install(installed, tmp_path: Path):
    target, env = installed
    code = (
        "import tfviz, tfviz_app.start_page as s, importlib.util as u\n"
        "print(tfviz.__file__)\n"
        "print(u.find_spec('app') is None)\n"
        "print(len(s.bundled_examples()), s.bundled_examples()[0].parent)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]
    lib, no_app, listing = r.stdout.splitlines()
    assert Path(lib).is_relative_to(target) and no_app == "True"
    n, folder = listing.split(" ", 1)
    assert int(n) == len(
        [
            p
            for p in (ROOT / "resources" / "examples").iterdir()
            if p.suffix in (".py", ".ipynb") and not p.name.startswith("_")
        ]
    )
    assert Path(folder) == target / "tfviz" / "examples"
