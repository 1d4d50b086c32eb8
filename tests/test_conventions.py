"""The command line's conventions: ``python -m tfviz``, every command's ``--help`` (a
description, its defaults, worked examples), and ``--color`` beside ``NO_COLOR`` and
``FORCE_COLOR``, through the installed command."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tfviz import cli
from tfviz.commands.table import COMMANDS

TFVIZ = str(Path(sys.executable).with_name("tfviz"))
ESC = "\x1b["


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(extra)
    return env


def test_python_dash_m_tfviz_is_the_command(tmp_path):
    version = subprocess.run([sys.executable, "-m", "tfviz", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.strip().startswith("tfviz "), version.stderr
    r = subprocess.run(
        [sys.executable, "-m", "tfviz", "check", str(EXAMPLES / "kind_stop_gradient.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert r.returncode == 1, r.stderr
    assert "teacher" in r.stdout and "stop_gradient" in r.stdout


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli._parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


@pytest.mark.parametrize("name", [c.name for c in COMMANDS])
def test_every_command_help_has_a_description_defaults_and_examples(name):
    sub = _subparsers()[name]
    assert sub.description and len(sub.description) > 60
    assert sub.epilog and "examples:\n  tfviz" in sub.epilog
    for action in sub._actions:
        if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
            assert action.help and "default" in action.help, (name, action.option_strings)
        if action.dest != "help":
            assert action.help, (name, action.dest)
    text = subprocess.run([TFVIZ, name, "--help"], capture_output=True, text=True).stdout
    assert sub.description.split()[0] in text and "examples:" in text


@pytest.mark.parametrize(
    ("flags", "env", "colored"),
    [
        ((), {}, False),  # not a terminal
        ((), {"FORCE_COLOR": "1"}, True),
        ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (("--color", "always"), {"NO_COLOR": "1"}, True),
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
    ],
)
def test_color_flag_and_environment(flags, env, colored):
    r = subprocess.run(
        [TFVIZ, "check", str(EXAMPLES / "kind_stop_gradient.py"), *flags],
        capture_output=True,
        text=True,
        env=_env(**env),
        timeout=300,
    )
    assert r.returncode == 1, r.stderr
    assert (ESC in r.stdout) is colored
