"""Warm workers: a server that has imported TensorFlow once forks each analysis worker.

Importing TensorFlow is most of a small ``tfviz check`` (about 4.5 of 5 seconds). When
``TFVIZ_WORKER_SERVER`` names the socket of a running server (``tfviz serve``, or ``python
-m tfviz.worker.forkserver SOCKET``, which ends when its stdin closes), the blocking client
(:mod:`tfviz.worker.client`) asks it for its worker instead of starting ``python -m
tfviz.worker``. The server forks a child that becomes that worker exactly: its own session
and process group, the client's pipes as its stdin, stdout and stderr, the client's working
directory, environment, umask and ignored signals, and then ``tfviz.worker`` run as ``-m``
runs it. Its random generators are its own: Python's reseeds in a forked child, and NumPy's
global one is seeded on its first use, which no worker makes before its script runs. Nothing
has run in the server but the worker's own imports (TensorFlow, Keras, the engine), which a
spawned worker makes too before it reads its request, so the analysis sees the same process.

The client gets a :class:`ForkedWorker`, which answers as :class:`subprocess.Popen` does:
``pid`` is the worker's (its process group is ended by pid, as a spawned one is), and
``wait``/``poll``/``returncode`` give its exit status, negative for a signal. Each worker
has a supervisor process of its own in the server, which waits for it and sends its status;
when the client goes away, the supervisor ends the worker's whole process group.

A server is only used when it can stand for a fresh process: the same Python, the same
tfviz, and the same values of every variable TensorFlow, Keras or the C runtime read when
they are imported (:data:`IMPORT_TIME_PREFIXES`). Otherwise, or when the socket does not
answer, the client starts a worker the usual way. The test suite runs one server per test
process (``tests/conftest.py``), and any script that runs ``tfviz check`` many times over
(a pre-commit hook, an editor's check on save) can do the same.
"""

from __future__ import annotations

import gc
import io
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Mapping
from typing import IO, Any

from tfviz.worker.launch import PACKAGE_ROOT, worker_environment

#: The environment variable that names the server's socket.
SERVER_VARIABLE = "TFVIZ_WORKER_SERVER"
#: Variables read when TensorFlow, Keras, NumPy or the C runtime load: a server started
#: with other values than the client's cannot stand for a fresh process.
IMPORT_TIME_PREFIXES = (
    "TF_",
    "KERAS_",
    "CUDA_",
    "XLA_",
    "TPU_",
    "OMP_",
    "KMP_",
    "MKL_",
    "OPENBLAS_",
    "ABSL_",
    "GRPC_",
    "LD_",
    "MALLOC_",
    "PYTHON",
    "HOME",
    "XDG_",
    "NPY_",
    "NUMPY_",
)
#: Variables of those that the worker's start sets itself, or TensorFlow's import does
#: (``tensorflow/python/tpu``: a caller that has imported TensorFlow, a notebook's, has them)
_SET_BY_LAUNCH = frozenset(
    {"PYTHONUNBUFFERED", SERVER_VARIABLE, "TPU_ML_PLATFORM", "TPU_ML_PLATFORM_VERSION"}
)
#: Signals whose "ignored" a spawned process inherits from its parent.
_INHERITED_IGNORES = ("SIGINT", "SIGHUP", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGALRM")
#: How long a client waits for the server to fork its worker.
_START_TIMEOUT_S = 30.0
_LINE_LIMIT = 1 << 20
#: True in a forked worker: it is the worker, and asks no server for another.
_forked = False


def import_time_differences(client: Mapping[str, str], server: Mapping[str, str]) -> list[str]:
    """The variables read at import time whose values differ between two environments, as a
    worker sees them once it has set its defaults (:data:`~tfviz.script.quiet.QUIET_ENVIRONMENT`:
    a caller that has imported TensorFlow itself has them set already).

    >>> import_time_differences({"TF_X": "1", "PATH": "/a"}, {"TF_X": "1", "PATH": "/b"})
    []
    >>> import_time_differences({"TF_X": "1", "HOME": "/h"}, {"HOME": "/h"})
    ['TF_X']
    >>> import_time_differences({"TF_CPP_MIN_LOG_LEVEL": "3"}, {})
    []
    >>> import_time_differences({"TPU_ML_PLATFORM": "Tensorflow", "TPU_ML_PLATFORM_VERSION": "2.21.0"}, {})
    []
    """
    from tfviz.script.quiet import QUIET_ENVIRONMENT

    client, server = {**QUIET_ENVIRONMENT, **client}, {**QUIET_ENVIRONMENT, **server}
    keys = {k for k in (*client, *server) if k.startswith(IMPORT_TIME_PREFIXES)} - _SET_BY_LAUNCH
    return sorted(k for k in keys if client.get(k) != server.get(k))


# -- the client --------------------------------------------------------------------------------


class ForkedWorker:
    """A worker forked by a server, with the part of :class:`subprocess.Popen`'s interface
    the client uses: ``stdin``, ``stdout``, ``stderr``, ``pid``, ``args``, ``returncode``,
    ``poll``, ``wait``, ``kill`` and ``send_signal``."""

    def __init__(
        self, lines: _Lines, pid: int, args: list[str], pipes: tuple[IO[bytes], IO[bytes], IO[bytes]]
    ) -> None:
        self._lines = lines
        self.pid = pid
        self.args = args
        self.stdin, self.stdout, self.stderr = pipes
        self.returncode: int | None = None
        #: the server's supervisor vanished without the worker's status: the server ended
        self.server_lost = False

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read_status(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not self._read_status(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def _read_status(self, timeout: float | None) -> bool:
        """Read the supervisor's status line; False when none came within ``timeout``."""
        line = self._lines.read(timeout)
        if line is None:
            return False
        self.returncode = _status(line)
        self.server_lost = not line
        self._lines.conn.close()
        return True


def _status(line: bytes) -> int:
    """The exit status in a supervisor's last line.

    >>> _status(b'{"status": -9}'), _status(b'{"status": 0}')
    (-9, 0)

    A supervisor that vanished without a word took its worker with it (the worker ends
    with its parent): reported as a kill, as for a process killed from outside.

    >>> _status(b"")
    -9
    """
    try:
        status = json.loads(line) if line else {}
    except ValueError:
        status = {}
    code = status.get("status") if isinstance(status, dict) else None
    return code if isinstance(code, int) else -signal.SIGKILL


def start_forked(env: Mapping[str, str], args: list[str]) -> ForkedWorker | None:
    """A worker forked by the server that ``env`` names, on new pipes, or None (no server,
    it refused, it did not answer): the caller then starts one itself."""
    pipes = [os.pipe() for _ in range(3)]
    theirs = [pipes[0][0], pipes[1][1], pipes[2][1]]
    ours = [pipes[0][1], pipes[1][0], pipes[2][0]]
    try:
        forked = _ask(env, theirs)
    finally:
        for fd in theirs:
            os.close(fd)
    if forked is None:
        for fd in ours:
            os.close(fd)
        return None
    lines, pid = forked
    buffering = 1 << 16
    return ForkedWorker(
        lines,
        pid,
        args,
        (
            os.fdopen(ours[0], "wb", buffering=buffering),
            os.fdopen(ours[1], "rb", buffering=buffering),
            os.fdopen(ours[2], "rb", buffering=buffering),
        ),
    )


def hand_over() -> int | None:
    """Called first thing by ``python -m tfviz.worker``: when a server is named, have it fork
    the worker on this process's own stdin, stdout and stderr, then stand for that worker
    until it ends and return its status (negative: the signal that ended it). None: no
    server took it, so this process is the worker.

    This is how the window's workers, which Qt starts as processes, are forked too. This
    process leads a group of its own already, as a worker does; ending it (its client's kill,
    or its client dying) makes the server end the worker's group. The window ends the group
    of the pid the worker itself reports (its ``ready`` message), so that happens at once."""
    if _forked:
        return None
    forked = _ask(os.environ, [0, 1, 2])
    if forked is None:
        return None
    lines, _pid = forked
    # Only the worker holds the client's pipes now: they close when it ends.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    from tfviz.worker.server import watch_parent

    watch_parent()  # a client that dies ends this process, and so the worker
    return _status(lines.read(None) or b"")


def _ask(env: Mapping[str, str], fds: list[int]) -> tuple[_Lines, int] | None:
    """Ask the server ``env`` names to fork a worker on ``fds`` (its stdin, stdout and
    stderr): the connection and the worker's pid, or None."""
    path = env.get(SERVER_VARIABLE)
    if not path or not hasattr(socket, "AF_UNIX") or not hasattr(socket, "send_fds"):
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(_START_TIMEOUT_S)
    lines = _Lines(conn)
    try:
        conn.connect(path)
        umask = os.umask(0o22)
        os.umask(umask)
        request = {
            "cwd": os.getcwd(),
            "env": dict(env),
            "executable": sys.executable,
            "package": str(PACKAGE_ROOT),
            "ignored": _ignored_signals(),
            "umask": umask,
        }
        socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], fds)
        line = lines.read(_START_TIMEOUT_S)
        answer = json.loads(line) if line else {}
    except (OSError, ValueError):
        answer = {}
    if not isinstance(answer, dict) or not isinstance(answer.get("pid"), int):
        conn.close()
        return None
    conn.settimeout(None)
    return lines, answer["pid"]


class _Lines:
    """The supervisor's answers: JSON lines on the connection."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self._buffer = b""

    def read(self, timeout: float | None) -> bytes | None:
        """The next line (b"" at the end of the stream), None when none came in time."""
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self.conn], [], [], timeout)
            if not ready:
                return None
            try:
                chunk = self.conn.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk or len(self._buffer) > _LINE_LIMIT:
                rest, self._buffer = self._buffer, b""
                return rest
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line


def _ignored_signals() -> list[str]:
    """The signals this process ignores, which a process it spawned would ignore too."""
    names = []
    for name in _INHERITED_IGNORES:
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) == signal.SIG_IGN:
            names.append(name)
    return names


# -- the server --------------------------------------------------------------------------------


def serve(path: str, ready: str = "ready", until_stdin_closes: bool = True) -> None:
    """Listen, import what a worker imports, print ``ready``, then fork a supervised worker
    per connection; with ``until_stdin_closes``, until stdin closes (the process that started
    the server has ended), else until a signal ends this process (``tfviz serve``).

    The socket is bound first: a path that cannot be listened on fails at once, and a client
    that comes while TensorFlow loads waits for its worker instead of starting its own."""
    from tfviz.script.quiet import import_tensorflow

    startup_env = worker_environment()  # what a worker started from here would have
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    umask = os.umask(0o177)  # a worker runs whatever its client asks: only this user may ask
    try:
        listener.bind(path)
    finally:
        os.umask(umask)
    listener.listen(64)

    import_tensorflow()
    import tfviz.analysis.diagnose  # a worker imports it before its request
    import tfviz.worker.server  # noqa: F401

    # What is loaded now is every worker's, for good: out of the collector's sight, so a
    # worker's collections do not write to (and so copy) every page it shares with us.
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped as they end
    print(ready, flush=True)
    watched = [listener.fileno(), 0] if until_stdin_closes else [listener.fileno()]
    while True:
        readable, _, _ = select.select(watched, [], [])
        if 0 in readable and not os.read(0, 4096):
            os._exit(0)
        if listener.fileno() not in readable:
            continue
        conn, _ = listener.accept()
        if os.fork() == 0:
            code = 1
            try:
                listener.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                # Ctrl-C or SIGTERM ends the server, not the analyses it forked
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                code = _supervise(conn, startup_env)
            finally:
                os._exit(code)
        conn.close()


def _supervise(conn: socket.socket, startup_env: Mapping[str, str]) -> int:
    """Fork the worker a client asked for, tell the client its pid, then its exit status;
    end its process group if the client goes away first."""
    data, fds = b"", []
    while b"\n" not in data:
        chunk, got, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        if not chunk:
            return 1
        data += chunk
        fds += got
    request = json.loads(data.partition(b"\n")[0])
    refusal = _refusal(request, startup_env, fds, _peer_uid(conn))
    if refusal:
        # said where the server runs: the client starts its own worker without a word
        print(f"tfviz serve: a client starts its own worker: {refusal}", file=sys.stderr, flush=True)
        conn.sendall(json.dumps({"refused": refusal}).encode() + b"\n")
        return 0
    pid = os.fork()
    if pid == 0:
        conn.close()
        _become_worker(request, fds)
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return _watch(conn, pid)


def _refusal(
    request: dict[str, Any], startup_env: Mapping[str, str], fds: list[int], peer_uid: int | None
) -> str:
    if peer_uid is not None and peer_uid != os.getuid():
        return "another user"
    if len(fds) != 3:
        return "expected three pipes"
    if request.get("executable") != sys.executable:
        return f"another Python ({sys.executable})"
    if request.get("package") != str(PACKAGE_ROOT):
        return f"another tfviz ({PACKAGE_ROOT})"
    differences = import_time_differences(request.get("env") or {}, startup_env)
    if differences:
        return "another environment: " + ", ".join(differences)
    return ""


def _peer_uid(conn: socket.socket) -> int | None:
    """The user id of the process at the other end (None where the system does not say)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _watch(conn: socket.socket, pid: int) -> int:
    """Wait for the worker or for the client to hang up, whichever comes first."""
    child = os.pidfd_open(pid)
    while True:
        ready, _, _ = select.select([conn.fileno(), child], [], [])
        if child in ready:
            _, status = os.waitpid(pid, 0)
            try:
                conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
            except OSError:
                pass
            return 0
        if not conn.recv(4096):  # the client is gone: so are the worker and its program
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            os.waitpid(pid, 0)
            return 0


def _become_worker(request: dict[str, Any], fds: list[int]) -> None:
    """Turn this child into ``python -X faulthandler -m tfviz.worker`` as the client would
    have started it; never returns."""
    global _forked
    _forked = True
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        _reset_signals(request.get("ignored") or [])
        os.chdir(request["cwd"])
        os.umask(int(request.get("umask", 0o22)))
        os.environ.clear()
        os.environ.update(request["env"])
        import tempfile

        tempfile.tempdir = None  # the server's cached temporary folder: the client's TMPDIR instead
        _new_streams()
        import faulthandler

        faulthandler.enable()
        sys.path[0] = os.getcwd()
        import runpy

        runpy.run_module("tfviz.worker", run_name="__main__", alter_sys=True)
    except BaseException:  # noqa: BLE001 - a worker that could not start says why on stderr
        import traceback

        traceback.print_exc()
    finally:
        os._exit(1)  # the worker itself ends with os._exit


def _reset_signals(ignored: list[str]) -> None:
    """Signal dispositions as a new Python process started by the client has them."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for name in _INHERITED_IGNORES:
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, signal.SIG_IGN if name in ignored else signal.SIG_DFL)
    if "SIGINT" not in ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _new_streams() -> None:
    """Fresh ``sys.std*`` on fds 0 to 2, unbuffered as ``PYTHONUNBUFFERED`` makes them: the
    server's objects may hold buffered bytes or a lock."""
    encoding = sys.stdout.encoding if sys.stdout is not None else "utf-8"
    stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=encoding)
    stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding, write_through=True)
    stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding=encoding, errors="backslashreplace", write_through=True
    )
    sys.stdin = sys.__stdin__ = stdin  # type: ignore[misc]
    sys.stdout = sys.__stdout__ = stdout  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = stderr  # type: ignore[misc]


class PrivateServer:
    """A warm server for one process's own workers (the window's): started at once, it
    imports TensorFlow while the caller goes on, and every worker the caller starts after
    it listens is forked from it (``TFVIZ_WORKER_SERVER`` is set in the caller's environment,
    which its workers inherit). It ends when :meth:`close` closes its stdin, or when the
    caller dies (the pipe closes with it): nothing of it outlives its caller. The socket
    is in a folder of its own (mode 0700), removed on close."""

    def __init__(self) -> None:
        import shutil
        import subprocess
        import tempfile

        self._rmtree = shutil.rmtree
        self.folder = tempfile.mkdtemp(prefix="tfviz-window-")
        self.path = os.path.join(self.folder, "s")
        self.proc = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "tfviz.worker.forkserver", self.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=worker_environment(),
            start_new_session=True,  # the terminal's Ctrl-C is the window's to handle
        )
        self._before = os.environ.get(SERVER_VARIABLE)
        os.environ[SERVER_VARIABLE] = self.path

    def close(self) -> None:
        """End the server (the analyses it forked are the caller's to end) and forget it."""
        import subprocess

        if os.environ.get(SERVER_VARIABLE) == self.path:
            if self._before is None:
                del os.environ[SERVER_VARIABLE]
            else:
                os.environ[SERVER_VARIABLE] = self._before
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._rmtree(self.folder, ignore_errors=True)


if __name__ == "__main__":
    # by its name, so that a worker forked from here finds this module's state
    from tfviz.worker.forkserver import serve as serve_here

    serve_here(sys.argv[1])
