"""The blocking client of a worker process: ``tfviz check`` runs one analysis with it, and
``tfviz jacobian`` an analysis and then the kept session's requests.

Whatever the user's script does to its process (``sys.exit``, ``os._exit``, a segfault,
threads that never end, writes to fd 1, reading stdin) can never change the command's
exit status or corrupt its stdout: it only ever ends the worker, and the way it ended is
reported as data (:func:`ended_error`). It speaks the very protocol the window's client
does (:mod:`tfviz.worker`), so each command is that protocol's end-to-end test.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, cast

from tfviz.procgroup import end_group
from tfviz.report import collector_paused
from tfviz.worker.forkserver import SERVER_VARIABLE, ForkedWorker, start_forked
from tfviz.worker.launch import worker_command, worker_environment
from tfviz.worker.messages import (
    ANALYSIS_ENDS,
    Answer,
    Failure,
    JacobianProgress,
    Log,
    Progress,
    Ready,
    Result,
    Steps,
    decode,
)

#: Bytes read from the worker's pipes at a time.
_PIPE_BUFFER = 1 << 16
#: How long a worker may take to exit after it is done before it is killed.
_EXIT_GRACE_S = 5.0
#: how a piece of a large Jacobian's data starts (:func:`tfviz.jacobian.data.split_pieces`)
_PIECE = "jacobian_piece"


class WorkerClient:
    """One worker process: answers are read in order, progress and the script's output
    handed to the callbacks as they come."""

    def __init__(
        self,
        on_progress: Callable[[Progress | JacobianProgress], None] | None = None,
        on_log: Callable[[Log], None] | None = None,
        on_stderr: Callable[[str], None] | None = None,
        on_steps: Callable[[Steps], None] | None = None,
    ) -> None:
        self.on_progress, self.on_log, self.on_stderr = on_progress, on_log, on_stderr
        self.on_steps = on_steps
        self.stderr_tail: deque[str] = deque(maxlen=200)
        env = worker_environment()
        # Forked by a warm server when one is named (tfviz.worker.forkserver), else started;
        # a started one is not sent to ask the server again.
        # Buffered pipes: lines are framed from 64 KB reads, never one byte per system call.
        self.proc: subprocess.Popen[bytes] | ForkedWorker = start_forked(
            env, worker_command()
        ) or subprocess.Popen(
            worker_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=_PIPE_BUFFER,
            env={k: v for k, v in env.items() if k != SERVER_VARIABLE},
        )
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()

    def wait_ready(self) -> Ready | Failure:
        """Wait until the worker has imported TensorFlow, as the window's spare workers do
        before an analysis is asked of them."""
        return cast(Ready | Failure, self._answer(frozenset({Ready.type})))

    def run(self, request: dict[str, Any]) -> Result | Failure:
        """One analysis, then the worker ends (even if the script left threads running).
        Ctrl-C (or SIGTERM, SIGHUP) ends it at once: no grace for a worker still at work."""
        try:
            answer = self.analyze(request)
        except KeyboardInterrupt:
            self.kill()
            raise
        except BaseException:
            self.close()
            raise
        self.close()
        return answer

    def analyze(self, request: dict[str, Any]) -> Result | Failure:
        return cast(Result | Failure, self.request(request, ANALYSIS_ENDS))

    def request(self, msg: dict[str, Any], until: frozenset[str]) -> Answer:
        """Send ``msg``; the first answer whose type is in ``until`` (or a :class:`Failure`),
        or a Failure that says how the worker ended without one."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            pass  # the worker is gone: reported below from its status
        return self._answer(until)

    def _answer(self, until: frozenset[str]) -> Answer:
        assert self.proc.stdout is not None
        pieces: list[dict[str, Any]] = []
        for raw in self.proc.stdout:
            try:
                with collector_paused():  # a result is a large tree of new objects
                    msg = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if msg.get("type") == _PIECE:
                pieces.append(msg)
                continue
            if pieces and msg.get("type") == "jacobian":
                from tfviz.jacobian.data import join_pieces  # NumPy: a check never needs it

                msg, pieces = join_pieces(msg, pieces), []
            answer = decode(msg)
            if isinstance(answer, (Progress, JacobianProgress)) and self.on_progress:
                self.on_progress(answer)
            elif isinstance(answer, Log) and self.on_log:
                self.on_log(answer)
            elif isinstance(answer, Steps) and self.on_steps:
                self.on_steps(answer)
            elif answer is not None and (answer.type in until or isinstance(answer, Failure)):
                return answer
        status = self.proc.wait()
        self._stderr_thread.join(timeout=2)
        if getattr(self.proc, "server_lost", False):
            return Failure(server_lost_error(list(self.stderr_tail)))
        return Failure(ended_error(status, list(self.stderr_tail)))

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            text = raw.decode("utf-8", "replace")
            self.stderr_tail.append(text.rstrip("\n"))
            if self.on_stderr:
                self.on_stderr(text)

    def close(self, grace_s: float = _EXIT_GRACE_S) -> None:
        """Close the request pipe (a kept session ends; a one-shot worker has ended already),
        wait for the worker, kill it when it will not go, and end what the program started."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        except KeyboardInterrupt:
            self.kill()
            raise
        finally:
            end_group(self.proc.pid)  # what the program started, even when the worker died first

    def kill(self) -> None:
        """End the worker and every process the program started."""
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
        message = (
            f"the script ended its process with exit status {status} (os._exit) before tfviz could answer"
        )
    fatal = [i for i, text in enumerate(stderr_tail) if text.startswith("Fatal Python error")]
    # a crash's trace from its first line: faulthandler lists every thread, tfviz's readers too
    detail = "\n".join(stderr_tail[fatal[-1] :][:80] if fatal else stderr_tail[-40:])
    file, line = _user_frame(stderr_tail[fatal[-1] :] if fatal else stderr_tail)
    return {"message": message, "file": file, "line": line, "code": "", "detail": detail, "candidates": []}


def server_lost_error(stderr_tail: list[str]) -> dict[str, Any]:
    """The warm server that forked the worker ended (killed) before the worker answered: the
    worker ends with it, and it is not the script that failed.

    >>> server_lost_error([])["message"][:41]
    'the tfviz server that forked the worker ('
    """
    from tfviz.worker.forkserver import SERVER_VARIABLE

    message = (
        f"the tfviz server that forked the worker ({SERVER_VARIABLE}) ended before tfviz could"
        " answer, and its worker with it: start the server again (tfviz serve), or unset"
        f" {SERVER_VARIABLE} to start a worker of the command's own"
    )
    return {
        "message": message,
        "file": None,
        "line": None,
        "code": "",
        "detail": "\n".join(stderr_tail[-40:]),
        "candidates": [],
    }


def _user_frame(stderr_tail: list[str]) -> tuple[str | None, int | None]:
    """The innermost user frame of a faulthandler trace (it lists innermost first), in the
    thread that crashed where the trace names it.

    >>> _user_frame(['  File "/u/train.py", line 12 in crash', '  File "/u/train.py", line 30 in <module>'])
    ('/u/train.py', 12)
    >>> _user_frame(['Thread 0x1 (most recent call first):', '  File "/u/a.py", line 3 in f', '',
    ...              'Current thread 0x2 (most recent call first):', '  File "/u/b.py", line 9 in g'])
    ('/u/b.py', 9)
    """
    from tfviz.script.sourcemap import is_user_file

    current = [i for i, text in enumerate(stderr_tail) if text.startswith("Current thread")]
    if current:
        stderr_tail = stderr_tail[current[-1] :] + stderr_tail[: current[-1]]
    for text in stderr_tail:
        m = re.match(r'\s*File "([^"]+)", line (\d+)', text)
        if m and is_user_file(m.group(1)):
            return m.group(1), int(m.group(2))
    return None, None
