"""The README is a front page and the reference lives in ``docs/``: the README stays short,
every link in both resolves, every kind of cut is documented, and the output the README
shows is what the command prints today."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLES, ROOT
from tfviz.vocabulary import Kind

README = ROOT / "README.md"
PAGES = [README, ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    assert text.index("![") < text.index("## Quick start")  # a screenshot near the top
    assert "make run" in text and "make test" in text


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if "://" in target:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_every_kind_is_documented():
    verdicts = (ROOT / "docs" / "verdicts.md").read_text()
    assert [k.value for k in Kind if f"`{k.value}`" not in verdicts] == []


def test_the_readmes_example_output_is_what_check_prints():
    text = README.read_text()
    block = text[text.index("$ tfviz check program_fit_bug.py") :].split("```")[0]
    shown = [ln for ln in block.splitlines()[1:] if ln.strip() and ln.strip() != "..."]
    out = subprocess.run(
        [str(Path(sys.executable).with_name("tfviz")), "check", "program_fit_bug.py"],
        capture_output=True,
        text=True,
        cwd=EXAMPLES,
        timeout=600,
    )
    assert out.returncode == 1, out.stderr
    printed = [ln.rstrip() for ln in out.stdout.splitlines()]
    assert [ln for ln in shown if ln.rstrip() not in printed] == []
