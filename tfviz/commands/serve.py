"""``tfviz serve [--socket PATH]``: keep TensorFlow imported, so that each ``tfviz check``,
``export`` or ``jacobian`` (and the window's workers) starts its worker in a fraction of a
second instead of importing TensorFlow anew (:mod:`tfviz.worker.forkserver`).

It prints the line to put in the environment (``TFVIZ_WORKER_SERVER=PATH``) once it is
ready, and serves until Ctrl-C or SIGTERM, then removes its socket; the analyses it has
forked run on to their end. A command whose
environment differs in what TensorFlow reads when it loads starts its own worker, as it
does with no server.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from typing import TYPE_CHECKING

from tfviz.commands.args import command_parser
from tfviz.exitstatus import ExitStatus, interrupted

if TYPE_CHECKING:
    from tfviz.commands.args import Subparsers


def add_parser(sub: Subparsers) -> None:
    s = command_parser(
        sub,
        "serve",
        summary="keep TensorFlow imported for faster checks (warm workers)",
        description="Import TensorFlow once and keep it: each tfviz check, export or jacobian"
        " whose environment names this server (TFVIZ_WORKER_SERVER) starts its worker as a fork"
        " of it, in a fraction of a second. It serves until Ctrl-C or SIGTERM; analyses it has"
        " started run on to their end.",
        notes="It prints the line to put in the environment once it is ready. A command whose"
        " environment differs in what TensorFlow reads at import starts its own worker.",
        examples=[
            ("tfviz serve &", "start it; it prints TFVIZ_WORKER_SERVER=PATH"),
            ("export TFVIZ_WORKER_SERVER=PATH", "then every tfviz check in this shell is warm"),
            ("tfviz serve --socket /tmp/tfviz.sock", "listen on a socket of your choosing"),
        ],
    )
    s.add_argument(
        "--socket",
        metavar="PATH",
        help="the socket to listen on (default: a new one in the temporary folder)",
    )


def run(args: argparse.Namespace) -> ExitStatus:
    from tfviz.worker.forkserver import SERVER_VARIABLE, serve

    folder = None
    path = args.socket
    if path is None:
        folder = tempfile.mkdtemp(prefix="tfviz-serve-")
        path = os.path.join(folder, "socket")
    path = os.path.abspath(path)
    if os.path.exists(path):
        print(f"tfviz: {path}: already exists (another server's socket?)", file=sys.stderr)
        return ExitStatus.ERROR
    if not os.path.isdir(os.path.dirname(path)):
        print(f"tfviz: {os.path.dirname(path)}: no such folder", file=sys.stderr)
        return ExitStatus.ERROR
    try:
        serve(path, ready=f"{SERVER_VARIABLE}={path}", until_stdin_closes=False)
    except KeyboardInterrupt as exc:  # Ctrl-C; SIGTERM and SIGHUP as the command line raises them
        return interrupted(exc)[1]
    except OSError as exc:
        print(f"tfviz: {path}: cannot listen there ({exc.strerror or exc})", file=sys.stderr)
        return ExitStatus.ERROR
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        if folder:
            with contextlib.suppress(OSError):
                os.rmdir(folder)
    return ExitStatus.OK
