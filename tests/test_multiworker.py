"""tfviz on tf.distribute jobs: every worker of a MultiWorkerMirroredStrategy job under a
``tfviz check`` of its own (TF_CONFIG, localhost ports chosen now), as a cluster job's
command wraps it; MirroredStrategy over two logical CPUs; a ParameterServerStrategy refused.

TensorFlow is the oracle: the same job run with ``python`` says at which step the loss turns
NaN, and each worker's log says which steps it finished (none past the one stopped at)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cluster_jobs import free_ports, tf_config

TFVIZ = Path(sys.executable).with_name("tfviz")
PROGRAMS = Path(__file__).parent / "programs" / "cluster"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background job's children ignore it otherwise


def start_job(
    command: list[str], n: int, cwd: Path, chief: bool = False
) -> tuple[list[subprocess.Popen[str]], list[int]]:
    """``command`` once per task, each with its TF_CONFIG, in a session of its own (its
    stdin a pipe: a worker started directly reads its request there). With ``chief``, the
    first task is the job's ``chief`` task and the others ``worker`` 0, 1, ..."""
    ports = free_ports(n)
    procs = []
    for i in range(n):
        env = {**os.environ, "TF_CONFIG": tf_config(ports, i, chief)}
        procs.append(
            subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
                preexec_fn=_default_sigint,
            )
        )
    return procs, ports


def finish(procs: list[subprocess.Popen[str]], timeout: float = 240) -> list[tuple[int, str, str]]:
    """Each worker's status and output; a job still running after ``timeout`` seconds is ended
    and fails the test with what each worker had said."""
    deadline = time.monotonic() + timeout
    out = []
    for p in procs:
        try:
            stdout, stderr = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(q.pid, signal.SIGKILL)
            said = [q.communicate() for q in procs]
            tails = "\n".join(f"--- worker {i}:\n{o[-2000:]}\n{e[-4000:]}" for i, (o, e) in enumerate(said))
            raise AssertionError(f"the job hung for {timeout} s\n{tails}") from None
        out.append((p.returncode, stdout, stderr))
    return out


def nothing_left(ports: list[int], script: Path) -> None:
    """No process of the job is left, and nothing listens on its ports."""
    deadline = time.monotonic() + 10
    while True:
        left = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            if str(script).encode() in cmdline or any(f"localhost:{p}".encode() in environ for p in ports):
                left.append(pid)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left, f"processes of the job left: {left}"
    for port in ports:
        with socket.socket() as s:
            # connections closed a moment ago wait out TIME_WAIT; a socket still listening fails
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("localhost", port))
            s.listen()


@pytest.fixture
def job(tmp_path: Path) -> Path:
    """The program in a folder of its own (its path names only this test's processes)."""
    script = tmp_path / "train_multiworker.py"
    script.write_text((PROGRAMS / "train_multiworker.py").read_text())
    (tmp_path / "logs").mkdir()
    return script


def finished_steps(folder: Path, task: int) -> list[int]:
    path = folder / f"worker-{task}.log"
    return [int(line.split()[0]) for line in path.read_text().splitlines()] if path.exists() else []


def plain_run(script: Path, args: list[str]) -> list[list[str]]:
    """The job under ``python``: each worker's log, a line per step (the step, its loss, and
    whether the weights are finite after its update): TensorFlow's own answer."""
    logs = script.parent / "plain"
    logs.mkdir()
    procs, _ = start_job([sys.executable, str(script), *args, "--log", str(logs)], 2, script.parent)
    for code, _, stderr in finish(procs):
        assert code == 0, stderr[-2000:]
    return [(logs / f"worker-{t}.log").read_text().splitlines() for t in (0, 1)]


def test_every_worker_stops_at_the_step_and_the_chief_reports(job: Path) -> None:
    logs = job.parent / "logs"
    procs, ports = start_job(
        [str(TFVIZ), "check", str(job), "--step", "3", "--", "--log", str(logs)], 2, job.parent
    )
    (c0, out0, err0), (c1, out1, err1) = finish(procs)
    assert c0 == 0, out0 + err0[-3000:]
    assert "-> gradients flow" in out0
    assert "2 workers of a cluster job (TF_CONFIG): every worker stopped at gradient step 3" in out0
    assert "worker 0 of 2's replica" in out0
    assert out1.strip() == "worker 1 of 2: stopped at gradient step 3; the chief reports", out1 + err1[-3000:]
    assert c1 == c0
    assert "Traceback" not in err0 + err1
    # both finished steps 1 and 2 (their collectives ran on both), neither ran step 3's update
    assert finished_steps(logs, 0) == [1, 2] and finished_steps(logs, 1) == [1, 2]
    nothing_left(ports, job)


@pytest.mark.parametrize(("where", "values"), [("y", "y (1 of 8 values)"), ("x", "x (1 of 64 values)")])
def test_until_nan_on_one_workers_data_stops_every_worker(job: Path, where: str, values: str) -> None:
    """A NaN in worker 1's targets (the loss turns NaN) or in its inputs (the loss stays
    finite: the compiled step's fused Relu turns NaN into 0, but the kernel's gradient is not)."""
    args = ["--nan-on", "1", "--nan-at", "3", "--nan-in", where, "--steps", "6"]
    lines = plain_run(job, args)
    # TensorFlow: step 3's update (all-reduced) leaves non-finite weights on both workers
    broken = [next(int(x.split()[0]) for x in w if x.endswith("non-finite")) for w in lines]
    assert broken == [3, 3]
    losses = [[float(x.split()[1]) for x in w] for w in lines]
    if where == "y":  # the all-reduced loss of step 3 is NaN on both workers
        assert [next(i + 1 for i, v in enumerate(w) if v != v) for w in losses] == [3, 3]
    else:
        assert all(v == v for w in losses for v in w)
    logs = job.parent / "logs"
    procs, ports = start_job(
        [
            str(TFVIZ),
            "check",
            str(job),
            "--until",
            "nan",
            "--format",
            "json",
            "--",
            *args,
            "--log",
            str(logs),
        ],
        2,
        job.parent,
    )
    (c0, out0, err0), (c1, out1, err1) = finish(procs)
    assert c0 == 1, out0 + err0[-3000:]
    assert c1 == 1, out1 + err1[-3000:]
    doc = json.loads(out0)
    assert doc["watch"]["fired"] == "nan" and doc["watch"]["step"] == broken[0]  # before its update
    assert doc["watch"]["fired_on"] == ["worker 1 of 2"]  # worker 0's batch was finite
    assert any("this is worker 1 of 2's replica" in n for n in doc["notes"])
    # the cause: the batch itself, counted as the program made it (one NaN in 8x8)
    (problem,) = doc["problems"]
    assert problem["kind"] == "nan"
    assert f"the step's input {values} holds NaN or infinite values" in problem["message"]
    assert problem["source"]["file"].endswith("train_multiworker.py")
    other = json.loads(out1)
    assert other == {
        "schema_version": 1,
        "tfviz": doc["tfviz"],
        "ok": False,
        "worker": "worker 1 of 2",
        "stopped_at": 3,
        "reported_by": "chief",
    }
    # no worker ran past the step worker 1 found bad: neither finished step 3
    assert finished_steps(logs, 0) == [1, 2] and finished_steps(logs, 1) == [1, 2]
    nothing_left(ports, job)


def test_until_nan_fired_on_the_chief(job: Path) -> None:
    args = ["--nan-on", "0", "--nan-at", "2"]
    procs, ports = start_job([str(TFVIZ), "check", str(job), "--until", "nan", "--", *args], 2, job.parent)
    (c0, out0, err0), (c1, out1, err1) = finish(procs)
    assert (c0, c1) == (1, 1), out0 + err0[-3000:] + out1 + err1[-3000:]
    assert "nan at gradient step 2" in out0 and "on: worker 0 of 2" in out0
    assert "this is worker 0 of 2's replica" in out0
    assert out1.strip() == "worker 1 of 2: stopped at gradient step 2; the chief reports"
    nothing_left(ports, job)


def test_a_job_with_a_chief_task_reports_from_the_chief(job: Path) -> None:
    args = ["--nan-on", "1", "--nan-at", "3"]
    command = [str(TFVIZ), "check", str(job), "--until", "nan", "--", *args]
    procs, ports = start_job(command, 2, job.parent, chief=True)
    (c0, out0, err0), (c1, out1, err1) = finish(procs)
    assert (c0, c1) == (1, 1), out0 + err0[-3000:] + out1 + err1[-3000:]
    assert "nan at gradient step 3" in out0 and "on: worker 0 of 2" in out0
    assert "this is worker 0 of 2's replica" in out0
    assert out1.strip() == "worker 0 of 2: stopped at gradient step 3 (nan fired here); the chief reports"
    nothing_left(ports, job)


def test_records_each_worker_its_own(job: Path) -> None:
    record = job.parent / "norms.csv"
    args = ["--nan-on", "1", "--nan-at", "4"]
    procs, ports = start_job(
        [str(TFVIZ), "check", str(job), "--until", "nan", "--record", str(record), "--", *args], 2, job.parent
    )
    (c0, out0, err0), (c1, out1, err1) = finish(procs)
    assert (c0, c1) == (1, 1), out0 + err0[-3000:] + out1 + err1[-3000:]
    mine = job.parent / "norms.worker-1.csv"
    assert f"this worker's record: {mine}" in out1
    for path in (record, mine):
        steps = {line.split(",")[0] for line in path.read_text().splitlines()[2:]}
        assert steps == {"1", "2", "3", "4"}, path  # every step watched, the one fired on too
    nothing_left(ports, job)


@pytest.mark.parametrize(("how", "gone"), [("kill", 1), ("interrupt", 1), ("kill", 0)])
def test_a_worker_gone_stops_the_other(job: Path, how: str, gone: int) -> None:
    """Worker ``gone`` (0 is the chief, which hosts the coordination service) is killed, or
    Ctrl-C ends it, well into training; the other stops and says whom it lost, and when."""
    args = ["--steps", "100000", "--sleep", "0.01"]
    procs, ports = start_job([str(TFVIZ), "check", str(job), "--until", "nan", "--", *args], 2, job.parent)
    time.sleep(12)
    assert procs[0].poll() is None and procs[1].poll() is None
    left = 1 - gone
    at = time.monotonic()
    if how == "kill":
        os.killpg(procs[gone].pid, signal.SIGKILL)  # the worker's command and everything it started
    else:
        procs[gone].send_signal(signal.SIGINT)  # Ctrl-C in that worker's terminal
    results = finish(procs, timeout=120)
    took = time.monotonic() - at
    code, _, err = results[left]
    assert code == 2, err[-3000:]
    assert f"worker {left} of 2: lost worker {gone} of 2 in gradient step" in err
    assert "a collective of the step could not reach it" in err
    assert "Traceback" not in err and "tfviz/program" not in err
    assert took < 60
    if how == "interrupt":
        code, _, err = results[gone]
        assert code == 130
        assert "interrupted" in err and "Traceback" not in err
    nothing_left(ports, job)


def test_a_workers_own_failure_is_the_cause_the_chief_names(job: Path) -> None:
    """Worker 1's program raises at step 3 (before the step): it says why and leaves; the
    chief, waiting in that step's collective, loses it and names worker 1's error first."""
    command = [str(TFVIZ), "check", str(job), "--step", "5", "--", "--fail-on", "1"]
    procs, ports = start_job(command, 2, job.parent)
    (c0, _, err0), (c1, _, err1) = finish(procs)
    assert (c0, c1) == (2, 2), err0[-3000:] + err1[-3000:]
    cause = (
        "worker 1 of 2: the program raised after 2 gradient computation(s): OSError: shard 1 is unreadable"
    )
    assert cause in err1
    first = err0.strip().splitlines()[0]
    assert cause in first and first.startswith(f"tfviz: {job}:")  # the line that raised
    assert "worker 0 of 2: lost worker 1 of 2 in gradient step 3" in err0
    assert "Traceback" not in err0 + err1
    nothing_left(ports, job)


def test_mirrored_strategy_stops_at_the_replica_whose_batch_is_bad(tmp_path: Path) -> None:
    script = PROGRAMS / "train_mirrored.py"
    plain = subprocess.run(
        [sys.executable, str(script), "--nan-replica", "1", "--nan-at", "3"], capture_output=True, text=True
    )
    assert plain.returncode == 0, plain.stderr[-2000:]
    losses = [float(line.split()[3]) for line in plain.stdout.splitlines() if line.startswith("step")]
    # TensorFlow: the mean loss turns non-finite at step 3. NaN mostly; inf where the unseeded
    # weights that meet the infinite input all have one sign (about one run in a hundred)
    assert next(i for i, loss in enumerate(losses, 1) if not math.isfinite(loss)) == 3
    done = subprocess.run(
        [str(TFVIZ), "check", str(script), "--until", "nan", "--json", "--", "--nan-replica", "1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert doc["watch"]["step"] == 3 and doc["watch"]["fired_on"] == ["replica 1 (CPU:1)"]
    # replica 1's own shard is replayed: its 4x8 + 4x1 values, one of them infinite
    assert "the step's input batch (1 of 36 values)" in doc["problems"][0]["message"]
    clean = subprocess.run([str(TFVIZ), "check", str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert clean.returncode == 0 and "-> gradients flow" in clean.stdout


def test_parameter_server_jobs_are_refused_before_they_run(tmp_path: Path) -> None:
    config = {
        "cluster": {"chief": ["localhost:1"], "worker": ["localhost:2"], "ps": ["localhost:3"]},
        "task": {"type": "chief", "index": 0},
    }
    done = subprocess.run(
        [str(TFVIZ), "check", str(PROGRAMS / "train_ps.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TF_CONFIG": json.dumps(config)},
        timeout=120,
    )
    assert done.returncode == 2
    assert "TF_CONFIG names ps tasks: a ParameterServerStrategy job. tfviz cannot stop one" in done.stderr
    assert "Traceback" not in done.stderr


def _ask(proc: subprocess.Popen[str], request: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[str]) -> dict[str, object]:
    assert proc.stdout is not None
    for line in proc.stdout:
        msg = json.loads(line)
        if msg.get("type") in ("result", "error"):
            return dict(msg)
    raise AssertionError(f"the worker ended without an answer: {proc.wait()}")


def _decided(request: dict[str, object], n: int, cwd: Path) -> list[dict[str, object]]:
    """Each worker's answer to ``request`` (asked of every worker before any answer is read:
    the chief's waits for the others')."""
    if n > 1:
        procs, _ = start_job([sys.executable, "-m", "tfviz.worker"], n, cwd)
    else:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "tfviz.worker"],
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        ]
    for p in procs:
        _ask(p, request)
    answers = [_answer(p) for p in procs]
    for p in procs:
        p.communicate(timeout=120)
    return answers


@pytest.mark.parametrize(
    ("program", "args", "workers"),
    [
        ("train_multiworker.py", ["--nan-on", "1", "--nan-at", "3"], 2),
        ("train_multiworker.py", ["--nan-on", "0", "--nan-at", "2"], 2),
        ("train_mirrored.py", ["--nan-replica", "1"], 1),
    ],
)
def test_agreement_riding_the_optimizers_all_reduce_decides_as_one_of_its_own(
    tmp_path: Path, program: str, args: list[str], workers: int
) -> None:
    """The fast path (the flags join the optimizer's all-reduce of the gradients) against the
    straightforward one (an all-reduce of their own before the update): the same step, the
    same replicas, the same report."""
    script = tmp_path / program
    script.write_text((PROGRAMS / program).read_text())
    seen = {}
    for agree in ("ride", "apart"):
        request = {
            "cmd": "analyze",
            "script": str(script),
            "args": args,
            "until": ["nan"],
            "step": 1000,
            "agree": agree,
        }
        answers = _decided(request, workers, tmp_path)
        chief = answers[0]
        assert chief["type"] == "result", chief
        report = chief["report"]
        assert isinstance(report, dict)
        watch = report["watch"]
        seen[agree] = (
            watch["step"],
            watch["fired"],
            watch["fired_on"],
            report["ok"],
            [(p["kind"], p["message"]) for p in report["problems"]],
            [a.get("status") for a in answers[1:]],
        )
    assert seen["ride"] == seen["apart"]
    assert seen["ride"][1] == "nan"
