"""How a worker is started, in one place: both clients (the blocking one here and the
window's on Qt) start the same command with the same environment (``tfviz export``'s
renderer gets that environment too)."""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Mapping
from pathlib import Path

#: the folder that holds the ``tfviz`` package
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def worker_command() -> list[str]:
    """The worker's command line. ``-X faulthandler`` makes a crash in the user's script
    (a segfault in a custom op) leave a trace even before the worker enables its own."""
    return [sys.executable, "-X", "faulthandler", "-m", "tfviz.worker"]


def worker_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: the caller's, unbuffered (every answer is sent at once),
    and able to import the very tfviz its client runs: a source checkout run in place is put
    on the path; an installed tfviz is found there already (and its site-packages is never
    put ahead of the standard library).

    >>> env = worker_environment({"PATH": "/bin", "PYTHONPATH": "/x"})
    >>> env["PYTHONUNBUFFERED"], env["PYTHONPATH"].split(os.pathsep)[-1]
    ('1', '/x')
    >>> worker_environment(env) == env  # applied twice, the same
    True
    """
    env = dict(os.environ if base is None else base)
    env["PYTHONUNBUFFERED"] = "1"
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if not _installed() and paths[:1] != [str(PACKAGE_ROOT)]:
        env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), *paths])
    return env


def _installed() -> bool:
    sites = [*site.getsitepackages(), site.getusersitepackages()]
    return any(Path(s).resolve() == PACKAGE_ROOT for s in sites if s)
