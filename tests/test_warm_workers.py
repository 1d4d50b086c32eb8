"""A worker forked by a warm server (tfviz.worker.forkserver) is the process a started one
is: the oracle is the same command with no server named."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT, default_sigint
from tfviz.script.quiet import QUIET_ENVIRONMENT
from tfviz.worker.forkserver import SERVER_VARIABLE, ForkedWorker

TFVIZ = Path(sys.executable).with_name("tfviz")
FACTS = ROOT / "tests" / "programs" / "warm" / "process_facts.py"

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forking needs a POSIX system")


def _server_ready(path: str | None) -> str:
    """The test process's server, once it listens (it imports TensorFlow first)."""
    if not path:
        pytest.skip("no warm server in this run (TFVIZ_TEST_NO_FORK)")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(path)
                return path
            except OSError:
                time.sleep(0.2)
    raise AssertionError("the warm server never listened")


def _env(server: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != SERVER_VARIABLE}
    if server:
        env[SERVER_VARIABLE] = server
    env.update(extra)
    return env


def _facts(tmp_path: Path, server: str | None, name: str, ignore_sigint: bool = False) -> dict:
    out = tmp_path / f"{name}.json"

    def preexec() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN if ignore_sigint else signal.SIG_DFL)

    done = subprocess.run(
        [str(TFVIZ), "check", str(FACTS), "--", str(out), "second"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=_env(server, TFVIZ_FACTS_PROBE=name),
        preexec_fn=preexec,
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), done.stdout + done.stderr
    assert done.returncode == 2 and "without computing a gradient" in done.stderr, done
    return json.loads(out.read_text())


@pytest.mark.parametrize("ignore_sigint", [False, True], ids=["sigint", "sigint_ignored"])
def test_a_forked_worker_is_the_process_a_started_one_is(warm_workers, tmp_path, ignore_sigint):
    server = _server_ready(warm_workers)
    started = _facts(tmp_path, None, "started", ignore_sigint)
    forked = _facts(tmp_path, server, "forked", ignore_sigint)
    again = _facts(tmp_path, server, "again", ignore_sigint)
    assert forked["probe"] == "forked" and again["probe"] == "again" and started["probe"] == "started"
    assert started["signals"]["SIGINT"] == ("SIG_IGN" if ignore_sigint else "default_int_handler")
    for key in (
        "leads_its_group",
        "leads_its_session",
        "cwd",
        "umask",
        "path0",
        "signals",
        "stdin",
        "faulthandler",
        "threads",
        "tensorflow",
    ):
        assert forked[key] == started[key] == again[key], key
    assert [f["argv"] for f in (started, forked, again)] == [
        [str(tmp_path / f"{name}.json"), "second"] for name in ("started", "forked", "again")
    ]
    # each run draws its own random numbers, as fresh processes do
    assert len({started["random"], forked["random"], again["random"]}) == 3
    assert len({started["numpy_random"], forked["numpy_random"], again["numpy_random"]}) == 3
    assert len({started["pid"], forked["pid"], again["pid"]}) == 3
    # what the server loaded (TensorFlow's million objects) is out of a forked worker's
    # collections, which would otherwise copy every page they share with the server; a
    # started worker freezes its own imports, so that its collections skip them too
    assert started["gc_frozen"] > 100_000
    assert forked["gc_frozen"] > 100_000 and again["gc_frozen"] == forked["gc_frozen"]


def test_the_client_gets_a_forked_worker_only_where_it_stands_for_a_started_one(warm_workers, monkeypatch):
    from tfviz.worker.client import WorkerClient
    from tfviz.worker.messages import Ready, Result

    _server_ready(warm_workers)
    # what importing TensorFlow in this process sets, a worker sets too: still forked
    for key, value in QUIET_ENVIRONMENT.items():
        monkeypatch.setenv(key, value)
    client = WorkerClient()
    try:
        assert isinstance(client.proc, ForkedWorker)
        ready = client.wait_ready()
        assert isinstance(ready, Ready) and ready.pid == client.proc.pid
        done = client.analyze({"cmd": "analyze", "script": str(EXAMPLES / "kind_stop_gradient.py")})
        assert isinstance(done, Result), done
    finally:
        client.close()
    assert client.proc.returncode == 0

    # a variable TensorFlow reads when it loads, set otherwise than in the server: started afresh
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "1")
    client = WorkerClient()
    try:  # (that such a worker answers is every test's with TFVIZ_TEST_NO_FORK=1)
        assert isinstance(client.proc, subprocess.Popen)
    finally:
        client.close()

    # a server that is not there: started afresh
    monkeypatch.delenv("TF_NUM_INTEROP_THREADS")
    monkeypatch.setenv(SERVER_VARIABLE, warm_workers + ".missing")
    client = WorkerClient()
    try:
        assert isinstance(client.proc, subprocess.Popen)
    finally:
        client.close()


def test_a_forked_workers_status_is_its_own(warm_workers):
    """Killed, it reads as a kill (negative), as Popen has it; its group goes with it."""
    from tfviz.worker.client import WorkerClient

    _server_ready(warm_workers)
    client = WorkerClient()
    assert isinstance(client.proc, ForkedWorker)
    client.wait_ready()
    assert client.proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        client.proc.wait(timeout=0.2)
    client.kill()
    assert client.proc.returncode == -signal.SIGKILL


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_client_killed_outright_takes_its_forked_worker_and_the_programs_children(warm_workers, tmp_path):
    server = _server_ready(warm_workers)
    script = tmp_path / "hangs.py"
    pids = tmp_path / "pids"
    script.write_text(
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(600)\n"
    )
    cli = subprocess.Popen(
        [str(TFVIZ), "check", str(script)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(server),
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + 120
        while not (pids.exists() and " " in pids.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        worker, child = map(int, pids.read_text().split())
        assert _alive(worker) and _alive(child)
    finally:
        cli.kill()  # SIGKILL: the CLI ends nothing itself
        cli.wait()
    deadline = time.monotonic() + 20
    while (_alive(worker) or _alive(child)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker) and not _alive(child)


def _started_worker(server: str) -> tuple[subprocess.Popen[str], int]:
    """``python -m tfviz.worker`` as the window starts it, and the pid its ready message gives."""
    from tfviz.worker.launch import worker_command, worker_environment

    proc = subprocess.Popen(
        worker_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=worker_environment(_env(server)),
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    assert ready["type"] == "ready", ready
    return proc, ready["pid"]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_started_worker_hands_over_to_the_server_and_ends_as_its_forked_worker_does(warm_workers, tmp_path):
    server = _server_ready(warm_workers)
    # answers come from the forked worker, and the started process exits with its status
    proc, pid = _started_worker(server)
    assert pid != proc.pid and _alive(pid)
    request = {"cmd": "analyze", "script": str(EXAMPLES / "kind_stop_gradient.py")}
    out, err = proc.communicate(json.dumps(request) + "\n", timeout=120)
    answers = [json.loads(line)["type"] for line in out.splitlines()]
    assert answers[-1] == "result" and proc.returncode == 0, err
    assert not _alive(pid)

    # the forked worker killed: the started process ends by the same signal
    proc, pid = _started_worker(server)
    os.kill(pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL

    # the started process killed (as the window kills a worker): the forked one goes too
    proc, pid = _started_worker(server)
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 20
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)

    # no server named: the started process is the worker
    from tfviz.worker.launch import worker_command, worker_environment

    proc = subprocess.Popen(
        worker_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=worker_environment(_env(None)),
    )
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline())["pid"] == proc.pid
    proc.communicate("", timeout=60)


def _serve(socket_path: Path) -> subprocess.Popen[str]:
    """``tfviz serve`` through the installed command, as a user runs it, once it is ready."""
    server = subprocess.Popen(
        [str(TFVIZ), "serve", "--socket", str(socket_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        env=_env(None),
        preexec_fn=default_sigint,
    )
    assert server.stdout is not None
    line = server.stdout.readline().strip()
    assert line == f"{SERVER_VARIABLE}={socket_path}", (line, server.stderr and server.stderr.read())
    return server


def test_tfviz_serve_forks_the_workers_of_the_commands_that_name_it_and_ends_on_ctrl_c(tmp_path):
    socket_path = tmp_path / "s"
    server = _serve(socket_path)
    try:
        assert socket_path.stat().st_mode & 0o777 == 0o600  # only this user may ask for a worker
        facts = _facts(tmp_path, str(socket_path), "served")
        assert facts["grandparent"] == server.pid  # the worker's supervisor is the server's child
        assert facts["probe"] == "served"
        # a client whose TensorFlow would load otherwise starts its own worker, and the server
        # says so where it runs
        other = subprocess.run(
            [str(TFVIZ), "check", str(FACTS), "--", str(tmp_path / "own.json")],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
            env=_env(str(socket_path), TF_NUM_INTEROP_THREADS="3"),
            stdin=subprocess.DEVNULL,
        )
        own = json.loads((tmp_path / "own.json").read_text())
        assert other.returncode == 2 and own["grandparent"] != server.pid
        # a second server on the same socket is refused
        again = subprocess.run(
            [str(TFVIZ), "serve", "--socket", str(socket_path)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert again.returncode == 2 and "already exists" in again.stderr
        # a path no socket can have fails at once, before TensorFlow is imported
        deep = tmp_path / ("d" * 200)
        deep.mkdir()
        too_long = subprocess.run(
            [str(TFVIZ), "serve", "--socket", str(deep / "s")],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert too_long.returncode == 2 and "cannot listen there" in too_long.stderr, too_long.stderr
        assert "Traceback" not in too_long.stderr
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 130
        assert not socket_path.exists()
        said = server.stderr.read() if server.stderr else ""
        assert "Traceback" not in said
        assert "a client starts its own worker: another environment: TF_NUM_INTEROP_THREADS" in said
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_tfviz_serve_ends_on_sigterm_as_on_ctrl_c(tmp_path):
    socket_path = tmp_path / "s"
    server = _serve(socket_path)
    try:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 143  # 128 + SIGTERM, as a shell reports it
        assert not socket_path.exists()
        assert "Traceback" not in (server.stderr.read() if server.stderr else "")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_the_server_forks_only_for_its_own_user_python_tfviz_and_import_time_environment():
    from tfviz.worker import forkserver
    from tfviz.worker.launch import worker_environment

    env = worker_environment()
    asked = {"executable": sys.executable, "package": str(forkserver.PACKAGE_ROOT), "env": env}
    assert forkserver._refusal(asked, env, [0, 1, 2], os.getuid()) == ""
    assert forkserver._refusal(asked, env, [0, 1, 2], os.getuid() + 1) == "another user"
    assert forkserver._refusal(asked, env, [0, 1], os.getuid()) == "expected three pipes"
    assert "another Python" in forkserver._refusal({**asked, "executable": "/x/python"}, env, [0, 1, 2], None)
    assert "another tfviz" in forkserver._refusal({**asked, "package": "/x"}, env, [0, 1, 2], None)
    other = {**asked, "env": {**env, "KERAS_HOME": "/elsewhere"}}
    assert forkserver._refusal(other, env, [0, 1, 2], None) == "another environment: KERAS_HOME"


def _check_in_background(program: Path, socket_path: Path) -> subprocess.Popen[str]:
    """``tfviz check PROGRAM`` through the server at ``socket_path``, left running."""
    return subprocess.Popen(
        [str(TFVIZ), "check", str(program)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        env=_env(str(socket_path)),
        cwd=program.parent,
    )


def test_a_killed_server_is_named_not_the_script(tmp_path):
    """The server killed while its forked worker runs the program: the worker ends with it,
    and the command says the server ended, not that the script's process did."""
    socket_path = tmp_path / "s"
    server = _serve(socket_path)
    program = tmp_path / "slow.py"
    program.write_text(
        "import time\n\nimport tensorflow as tf\n\nprint('started', flush=True)\ntime.sleep(60)\n"
    )
    try:
        check = _check_in_background(program, socket_path)
        time.sleep(3.0)  # the program runs in a worker the server forked

        def children(pid: int) -> list[int]:
            out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
            return [int(p) for p in out.stdout.split()]

        # the server dies and takes its worker with it: its supervisor, then the worker's group
        (supervisor,) = children(server.pid)
        (worker,) = children(supervisor)
        server.kill()
        os.kill(supervisor, signal.SIGKILL)
        os.killpg(worker, signal.SIGKILL)
        server.wait(timeout=30)
        _, err = check.communicate(timeout=60)
        assert check.returncode == 2, err
        assert "the tfviz server that forked the worker" in err and "script's process" not in err, err
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_a_server_killed_alone_lets_its_analysis_finish(tmp_path):
    """Only the listening server killed (SIGKILL): the analysis it forked runs on to its end
    and reports, and the next command, finding no server, starts a worker of its own."""
    socket_path = tmp_path / "s"
    server = _serve(socket_path)
    program = tmp_path / "slow.py"
    program.write_text(
        "import time\n\nimport tensorflow as tf\n\nw = tf.Variable(1.0)\ntime.sleep(4)\n\n\n"
        "def loss():\n    return w * 2.0\n"
    )
    try:
        check = _check_in_background(program, socket_path)
        time.sleep(2.0)  # the program runs in a worker the server forked
        server.kill()
        server.wait(timeout=30)
        out, err = check.communicate(timeout=120)
        assert check.returncode == 0, err
        assert "connected  |grad|=2" in out
        again = subprocess.run(
            [str(TFVIZ), "check", str(program)],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=_env(str(socket_path)),
            cwd=tmp_path,
            timeout=120,
        )
        assert again.returncode == 0 and "connected  |grad|=2" in again.stdout, again.stderr
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_a_private_server_forks_its_callers_workers_and_ends_with_it(monkeypatch, tmp_path):
    """The window's own server (:class:`PrivateServer`): once it listens, the caller's workers
    are forked from it (the client holds a ForkedWorker, not a process it started), and
    closing it ends the server, removes its socket's folder and puts the environment back."""
    from tfviz.worker.client import WorkerClient
    from tfviz.worker.forkserver import ForkedWorker, PrivateServer

    monkeypatch.delenv(SERVER_VARIABLE, raising=False)
    server = PrivateServer()
    try:
        assert os.environ[SERVER_VARIABLE] == server.path
        _server_ready(server.path)  # it listens once TensorFlow is imported
        program = tmp_path / "t.py"
        program.write_text(
            "import tensorflow as tf\nw = tf.Variable(3.0)\n\n\ndef loss():\n    return w * w\n"
        )
        for _ in range(2):  # a re-run is a fork too
            client = WorkerClient()
            assert isinstance(client.proc, ForkedWorker)
            answer = client.run({"cmd": "analyze", "script": str(program)})
            assert answer.report["variables"][0]["grad_norm"] == 6.0
    finally:
        server.close()
    assert server.proc.poll() is not None and not os.path.exists(server.folder)
    assert SERVER_VARIABLE not in os.environ
