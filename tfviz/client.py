"""Run one analysis in a worker process and wait for its answer.

``tfviz check`` is a client of the same worker the window uses, so whatever
the user's script does to its process (``sys.exit``, ``os._exit``, a
segfault, threads that never end, writes to fd 1, reading stdin) can never
change the CLI's exit status or corrupt its stdout: it only ever ends the
worker, and the way it ended is reported as data.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, cast

from tfviz.procgroup import end_group

#: Bytes read from the worker's pipes at a time.
_PIPE_BUFFER = 1 << 16
#: How long a worker may take to exit after its answer before it is killed.
_EXIT_GRACE_S = 5.0


def worker_command() -> list[str]:
    return [sys.executable, "-X", "faulthandler", "-m", "tfviz.worker"]


class WorkerRun:
    """One worker process serving one request."""

    def __init__(self, on_progress: Callable[[str, float], None] | None = None,
                 on_log: Callable[[str, str], None] | None = None,
                 on_stderr: Callable[[str], None] | None = None) -> None:
        self.on_progress, self.on_log, self.on_stderr = on_progress, on_log, on_stderr
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr_tail: deque[str] = deque(maxlen=60)
        self._stderr_thread: threading.Thread | None = None

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        """The worker's ``result`` or ``error`` message, or an ``error`` that
        describes how the worker ended without one."""
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # Buffered pipes: lines are framed from 64 KB reads, never one byte per system call.
        self.proc = subprocess.Popen(
            worker_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, bufsize=_PIPE_BUFFER,
        )
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            pass  # the worker died at start; reported below from its status
        try:
            answer = self._read_answer()
        finally:
            self._finish()
        return answer

    def _read_answer(self) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            kind = msg.get("type") if isinstance(msg, dict) else None
            if kind == "progress" and self.on_progress:
                self.on_progress(str(msg.get("stage", "")), float(msg.get("fraction", 0.0)))
            elif kind == "log" and self.on_log:
                self.on_log(str(msg.get("stream", "stdout")), str(msg.get("text", "")))
            elif kind in ("result", "error"):
                return cast(dict[str, Any], msg)  # a JSON object: it has a "type"
        status = self.proc.wait()
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout=2)
        return {"type": "error", "error": ended_error(status, list(self.stderr_tail))}

    def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for raw in self.proc.stderr:
            text = raw.decode("utf-8", "replace")
            self.stderr_tail.append(text.rstrip("\n"))
            if self.on_stderr:
                self.on_stderr(text)

    def _finish(self) -> None:
        """The worker ends after its answer, even if the script left threads running."""
        proc = self.proc
        if proc is None:
            return
        try:
            proc.wait(timeout=_EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except KeyboardInterrupt:
            self.kill()
            raise
        finally:
            end_group(proc.pid)  # what the program started, even when the worker died first

    def kill(self) -> None:
        """End the worker and every process the program started."""
        if self.proc is not None:
            end_group(self.proc.pid)
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()


def ended_error(status: int, stderr_tail: list[str]) -> dict[str, Any]:
    """How a worker that never answered ended, in words.

    >>> print(ended_error(-11, ["Fatal Python error: Segmentation fault"])["message"])
    the script's process ended with signal SIGSEGV before tfviz could answer
    >>> print(ended_error(3, [])["message"])
    the script ended its process with exit status 3 (os._exit) before tfviz could answer
    """
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        message = f"the script's process ended with signal {name} before tfviz could answer"
    else:
        message = (f"the script ended its process with exit status {status} (os._exit) before"
                   " tfviz could answer")
    detail = "\n".join(stderr_tail[-40:])
    file, line = _user_frame(stderr_tail)
    return {"message": message, "file": file, "line": line, "code": "",
            "detail": detail, "candidates": []}


def _user_frame(stderr_tail: list[str]) -> tuple[str | None, int | None]:
    """The innermost user frame of a faulthandler trace (it lists innermost first).

    >>> _user_frame(['  File "/u/train.py", line 12 in crash', '  File "/u/train.py", line 30 in <module>'])
    ('/u/train.py', 12)
    """
    from tfviz.script.sourcemap import is_user_file

    for text in stderr_tail:
        m = re.match(r'\s*File "([^"]+)", line (\d+)', text)
        if m and is_user_file(m.group(1)):
            return m.group(1), int(m.group(2))
    return None, None
