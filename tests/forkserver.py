"""The oracles' processes, forked from one that has imported TensorFlow already.

TensorFlow's own answer (``tests/program_truth.py``, ``tests/update_truth.py``) is computed
in a fresh process per program, as ``python SCRIPT ARGS...`` would run it: the program
sets seeds, names layers and configures TensorFlow, and none of that may leak into the
next one. Importing TensorFlow is most of such a run (about 4 of 5 seconds for a small
program), so it is done once here: a server process imports TensorFlow and Keras, then
forks one child per run. A child starts from a process that has imported TensorFlow and
done nothing else (no op ran, no thread pool started, no seed set), which is what a new
process is by the time its script's first line runs; its random generators are reseeded.

:func:`run` takes the command line a test would give :func:`subprocess.run` and answers the
same way. A command that is not ``python SCRIPT...``, or a platform without ``fork``, runs
as a plain subprocess (and so does every one with ``TFVIZ_TEST_NO_FORK=1``).

The server (``python tests/forkserver.py SOCKET``) serves each connection in a supervisor
child, which forks the run, waits for it, and sends back its exit status and output; so a
run that crashes or hangs never touches the server, and runs proceed side by side.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: what the server imports before it forks
PRELOAD = ("tensorflow", "keras", "numpy")

_server: subprocess.Popen[bytes] | None = None
_socket_path: str | None = None
_lock = threading.Lock()


def run(
    cmd: list[str], *, cwd: str | os.PathLike[str] | None = None, timeout: float = 600, **_: Any
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(cmd, capture_output=True, text=True, ...)``, forked when it can be."""
    if len(cmd) < 2 or cmd[0] != sys.executable or not cmd[1].endswith(".py") or not _available():
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL
        )
    path = _ensure_server()
    request = {"argv": cmd[1:], "cwd": str(cwd or os.getcwd()), "timeout": timeout}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout + 30)
        s.connect(path)
        s.sendall(json.dumps(request).encode() + b"\n")
        s.shutdown(socket.SHUT_WR)
        data = b"".join(iter(lambda: s.recv(1 << 16), b""))
    answer = json.loads(data)
    if answer.get("timed_out"):
        raise subprocess.TimeoutExpired(cmd, timeout, answer["stdout"], answer["stderr"])
    return subprocess.CompletedProcess(cmd, answer["returncode"], answer["stdout"], answer["stderr"])


def _available() -> bool:
    """``TFVIZ_TEST_NO_FORK=1`` runs every oracle as a plain process, to compare."""
    return hasattr(os, "fork") and hasattr(socket, "AF_UNIX") and not os.environ.get("TFVIZ_TEST_NO_FORK")


#: an oracle server the session's controller started for all its pytest workers (``-n N``)
SHARED_SERVER = "TFVIZ_TEST_ORACLE_SERVER"


def start() -> str:
    """Start this process's server now (the controller's, for its workers): its socket path."""
    return _ensure_server()


def _ensure_server() -> str:
    global _server, _socket_path
    shared = os.environ.get(SHARED_SERVER)
    if shared and _server is None:
        return shared
    with _lock:
        if _server is not None and _server.poll() is None and _socket_path:
            return _socket_path
        folder = tempfile.mkdtemp(prefix="tfviz-forkserver-")
        _socket_path = os.path.join(folder, "s")
        _server = subprocess.Popen(
            [sys.executable, str(HERE / "forkserver.py"), _socket_path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert _server.stdout is not None
        if _server.stdout.readline().strip() != b"ready":
            raise RuntimeError("the oracles' fork server did not start")
        atexit.register(_stop, _server)
        return _socket_path


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


# -- the server --------------------------------------------------------------------------------


def serve(path: str) -> None:
    # Listening first: "ready" is said at once, and a run asked for while TensorFlow loads
    # waits in the backlog (the session's controller starts this before its workers exist).
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    # ends with the test session that started it: its stdin closes
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    print("ready", flush=True)
    for name in PRELOAD:
        __import__(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors are reaped as they end
    # What is loaded now is every run's, for good: out of the collector's sight, so a run's
    # collections do not write to (and so copy) every page it shares with this process.
    gc.collect()
    gc.freeze()
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _supervise(conn)
            finally:
                os._exit(0)
        conn.close()


def _supervise(conn: socket.socket) -> None:
    request = json.loads(conn.makefile("rb").readline())
    out = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the forked child and closed after it
    err = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the forked child and closed after it
    pid = os.fork()
    if pid == 0:
        _child(request, out.fileno(), err.fileno())
    timed_out = threading.Event()
    timer = threading.Timer(
        float(request["timeout"]), lambda: (timed_out.set(), os.kill(pid, signal.SIGKILL))
    )
    timer.start()
    _, status = os.waitpid(pid, 0)
    timer.cancel()
    code = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    answer = {
        "returncode": code,
        "timed_out": timed_out.is_set(),
        "stdout": out.read().decode("utf-8", "replace"),
        "stderr": err.read().decode("utf-8", "replace"),
    }
    conn.sendall(json.dumps(answer).encode())
    conn.close()


def _child(request: dict[str, Any], out: int, err: int) -> None:
    """Become ``python SCRIPT ARGS...`` run in ``cwd``: its own process group, stdin empty."""
    code = 1
    try:
        os.setpgid(0, 0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        # the server's stdin is read by a thread that holds its lock: this one is new
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - lives as the process
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.chdir(request["cwd"])
        script, *args = request["argv"]
        sys.argv = [script, *args]
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        _reseed()
        import runpy

        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # noqa: BLE001 - the program's own failure, as python reports it
            import traceback

            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _reseed() -> None:
    """A forked child inherits its parent's generators: give each run fresh ones, as a new
    process gets."""
    import random

    import numpy as np

    random.seed()
    np.random.seed(int.from_bytes(os.urandom(4), "little"))


if __name__ == "__main__":
    serve(sys.argv[1])
