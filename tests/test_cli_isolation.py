"""`tfviz check` is a gate CI can trust: whatever the script does to its
process, the exit code and the (JSON) output stay tfviz's own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT
from tfviz.worker.launch import worker_command, worker_environment

HEALTHY = "import tensorflow as tf\n\nw = tf.Variable(2.0)\n\n\ndef loss():\n    return w * w\n"


def check(
    *args: str,
    script: Path | None = None,
    timeout: float = 300,
    env: dict | None = None,
    stdin=subprocess.DEVNULL,
) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tfviz.cli", "check", *([str(script)] if script else []), *args]
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdin=stdin,
    )


def write(tmp_path: Path, text: str, name: str = "s.py", encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def error_of(done: subprocess.CompletedProcess) -> dict:
    doc = json.loads(done.stdout)
    assert doc["ok"] is False
    return doc["error"]


@pytest.mark.parametrize(
    "call,words", [("sys.exit(0)", "sys.exit(0)"), ("sys.exit('bye')", "sys.exit('bye')")]
)
def test_target_calling_sys_exit_is_exit_2_with_its_line(tmp_path, call, words):
    body = f"    import sys\n    {call}\n    return w * w"
    script = write(tmp_path, HEALTHY.replace("    return w * w", body))
    done = check("--json", script=script)
    assert done.returncode == 2
    err = error_of(done)
    assert words in err["message"] and err["line"] == 8


def test_leftover_non_daemon_thread_does_not_keep_check_alive(tmp_path):
    script = write(
        tmp_path,
        "import threading, time\nthreading.Thread(target=time.sleep, args=(600,)).start()\n" + HEALTHY,
    )
    done = check(script=script, timeout=120)
    assert done.returncode == 0 and "gradients flow" in done.stdout


def test_json_stays_parseable_when_the_script_writes_to_fd_1(tmp_path):
    noisy = "    tf.print('tf.print', output_stream=sys.stdout)\n    return w * w"
    script = write(
        tmp_path,
        "import os, sys\nimport tensorflow as tf\nos.write(1, b'raw fd 1\\n')\n"
        "print('to real stdout', file=sys.__stdout__)\n" + HEALTHY.replace("    return w * w", noisy),
    )
    done = check("--json", script=script)
    assert done.returncode == 0
    assert json.loads(done.stdout)["ok"] is True


@pytest.mark.parametrize("graph", ["missing/folder/g.json", ".", "/proc/forbidden.json"])
def test_bad_graph_path_keeps_the_report_and_the_exit_code(tmp_path, graph):
    script = write(tmp_path, HEALTHY)
    target = graph if graph.startswith("/") else str(tmp_path / graph)
    done = check("--graph", target, script=script)
    assert "Traceback" not in done.stderr
    assert done.returncode == 0 and "gradients flow" in done.stdout
    (line,) = [t for t in done.stderr.splitlines() if "cannot write --graph" in t]


def test_graph_never_overwrites_the_script_or_a_foreign_file(tmp_path):
    script = write(tmp_path, HEALTHY)
    done = check("--graph", str(script), script=script)
    assert done.returncode == 2 and script.read_text() == HEALTHY
    notes = write(tmp_path, "my notes\n", "notes.txt")
    done = check("--graph", str(notes), script=script)
    assert done.returncode == 2 and notes.read_text() == "my notes\n" and "--force" in done.stderr
    done = check("--graph", str(notes), "--force", script=script)
    assert done.returncode == 0 and json.loads(notes.read_text())["ok"] is True
    again = check("--graph", str(notes), script=script)  # a graph tfviz wrote may be replaced
    assert again.returncode == 0


@pytest.mark.parametrize(
    "text,encoding",
    [
        ("\ufeff" + HEALTHY, "utf-8"),
        ("# -*- coding: latin-1 -*-\n# caf\u00e9\n" + HEALTHY, "latin-1"),
    ],
)
def test_scripts_are_read_as_python_reads_them(tmp_path, text, encoding):
    done = check(script=write(tmp_path, text, encoding=encoding))
    assert done.returncode == 0, done.stderr


def test_input_fails_fast_at_its_line_even_with_an_open_pipe(tmp_path):
    script = write(tmp_path, "name = input('your name? ')\n" + HEALTHY)
    done = check("--json", script=script, stdin=subprocess.PIPE, timeout=120)
    assert done.returncode == 2
    err = error_of(done)
    assert "EOFError" in err["message"] and "stdin" in err["message"] and err["line"] == 1


def test_tf1_graph_mode_is_refused_with_its_line(tmp_path):
    script = write(tmp_path, "import tensorflow as tf\ntf.compat.v1.disable_eager_execution()\n")
    done = check("--json", script=script)
    assert done.returncode == 2
    err = error_of(done)
    assert "graph mode" in err["message"] and err["line"] == 2


def test_a_loss_target_in_tf1_graph_mode_is_refused_with_its_line(tmp_path):
    script = write(
        tmp_path,
        "import tensorflow as tf\n\ntf.compat.v1.disable_eager_execution()\n"
        "w = tf.Variable(1.0)\n\n\ndef loss():\n    return w * w\n",
    )
    done = check("--json", script=script)
    assert done.returncode == 2
    err = error_of(done)
    assert "graph mode" in err["message"] and err["line"] == 3 and "internal error" not in err["message"]
    assert "disable_eager_execution" in err["code"]


def test_no_temporary_file_is_left_behind(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = check(script=EXAMPLES / "healthy_control_flow.py", env={"TMPDIR": str(temp)})
    assert done.returncode == 0
    assert list(temp.iterdir()) == []


@pytest.mark.parametrize(
    "body,words",
    [
        ("import os\n    os._exit(3)", "exit status 3"),
        ("import ctypes\n    ctypes.string_at(0)", "SIGSEGV"),
    ],
)
def test_a_script_ending_its_process_is_reported(tmp_path, body, words):
    script = write(tmp_path, HEALTHY.replace("    return w * w", f"    {body}\n    return w * w"))
    done = check("--json", script=script)
    assert done.returncode == 2
    err = error_of(done)
    assert words in err["message"]


def test_killing_check_ends_its_worker(tmp_path):
    """A worker the command started itself (a forked one: tests/test_warm_workers.py)."""
    from tfviz.worker.forkserver import SERVER_VARIABLE

    script = write(tmp_path, "import time\ntime.sleep(600)\n" + HEALTHY)
    env = {k: v for k, v in os.environ.items() if k != SERVER_VARIABLE}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfviz.cli", "check", str(script)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    children: list[int] = []
    deadline = time.monotonic() + 60
    while not children and time.monotonic() < deadline:
        time.sleep(0.5)
        path = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        children = [int(p) for p in path.read_text().split()] if path.exists() else []
    assert children, "no worker started"
    time.sleep(2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{children[0]}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
        status = Path(f"/proc/{children[0]}/stat")
        if status.exists() and status.read_text().split()[2] == "Z":
            break
    alive = Path(f"/proc/{children[0]}/stat")
    assert not alive.exists() or alive.read_text().split()[2] == "Z"


def test_no_trainable_variables_is_not_a_pass(tmp_path):
    script = write(tmp_path, "import tensorflow as tf\n\n\ndef loss():\n    return tf.constant(1.0)\n")
    done = check(script=script)
    assert done.returncode == 2 and "no trainable variables" in done.stderr
    assert check("--allow-empty", script=script).returncode == 0


def test_list_targets_json_checks_the_file_first(tmp_path):
    done = check("--list-targets", "--json", str(tmp_path / "missing.py"), timeout=30)
    assert done.returncode == 2 and "no such file" in error_of(done)["message"]
    done = check("--list-targets", "--json", str(EXAMPLES / "kind_integer.py"), timeout=30)
    assert json.loads(done.stdout)["targets"] == ["loss"]


def test_symlinked_script_imports_its_real_siblings(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "helper.py").write_text("import tensorflow as tf\nw = tf.Variable(3.0)\n")
    write(real, "from helper import w\n\n\ndef loss():\n    return w * w\n", "train.py")
    link = tmp_path / "train.py"
    link.symlink_to(real / "train.py")
    done = check(script=link)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"\x00\xff garbage \x10\n",
        b"[1, 2]\n",
        b"null\n",
        b'{"cmd": "analyze"}\n',
        b'{"cmd": "analyze", "script": 5}\n',
        b'{"cmd": "analyze", "script": "x.py", "step": "two"}\n',
        b'{"cmd": "nope"}\n',
    ],
)
def test_worker_answers_every_bad_request_with_a_json_error(request_bytes):
    proc = subprocess.run(
        worker_command(),
        env=worker_environment(),
        input=request_bytes,
        capture_output=True,
        timeout=120,
        cwd=ROOT,
    )
    messages = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert messages[0]["type"] == "ready"
    assert messages[-1]["type"] == "error" and messages[-1]["error"]["message"].startswith(
        ("bad request", "unknown command")
    )
    assert "Traceback" not in proc.stderr.decode()
