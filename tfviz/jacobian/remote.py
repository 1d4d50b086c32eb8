"""A kept-session worker driven from Python (the ``tfviz jacobian`` command).

The command runs the analysis and the Jacobian in a worker process, as
``tfviz check`` does, rather than in its own process: whatever the script
does to its process (``sys.exit``, a segfault, writes to fd 1) only ends
the worker and is reported as data, so it can never corrupt the file the
command writes or its exit status; and it speaks the very protocol the
GUI panel uses, so the command is that protocol's end-to-end test.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, cast

from tfviz.client import ended_error, worker_command
from tfviz.jacobian.data import join_pieces


class SessionWorker:
    """One worker holding one analyzed session."""

    def __init__(self, on_progress: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.on_progress = on_progress
        self.stderr_tail: deque[str] = deque(maxlen=60)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(worker_command(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     bufsize=0)
        threading.Thread(target=self._drain, daemon=True).start()

    def request(self, msg: dict[str, Any], until: tuple[str, ...]) -> dict[str, Any]:
        """Send ``msg``; return the first answer whose type is in ``until``
        (or ``error``), or an ``error`` saying how the worker ended."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            pass  # the worker is gone: reported below from its status
        assert self.proc.stdout is not None
        pieces: list[dict[str, Any]] = []
        for raw in self.proc.stdout:
            try:
                answer = json.loads(raw)
            except ValueError:
                continue
            kind = answer.get("type") if isinstance(answer, dict) else None
            if kind in ("progress", "jacobian_progress") and self.on_progress:
                self.on_progress(answer)
            elif kind == "jacobian_piece":
                pieces.append(answer)
            elif kind in until or kind == "error":
                return join_pieces(answer, pieces) if pieces else cast(dict[str, Any], answer)
        status = self.proc.wait()
        return {"type": "error", "error": ended_error(status, list(self.stderr_tail))}

    def close(self, grace_s: float = 5.0) -> None:
        """Close the request pipe (the worker ends), then make sure it has."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr_tail.append(raw.decode("utf-8", "replace").rstrip("\n"))
