"""Benchmark: a watched multi-worker job's training steps against the same job unwatched.

Two MultiWorkerMirroredStrategy workers on localhost ports chosen now (tests/bench/programs/
cluster/multiworker_mlp.py: an MLP, a custom loop, batch 64 per worker, 300 steps), run as

- plain:    python multiworker_mlp.py                           on each worker
- watched:  tfviz check multiworker_mlp.py --until nan -- ...   on each worker (every step
            checked, and agreed through one all-reduce of a flag per step)

alternating REPEATS times. Each worker logs when each step ended; a step's time is the median
gap between consecutive steps after the first 50 (the traces and the first all-reduces
excluded), worker 0's, and the table shows the median over the repeats. Target: watched at
most 1.3x plain per step (goal 1.1x).

    .venv/bin/python tests/bench/bench_multiworker.py [REPEATS]   (default 3)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tests.cluster_jobs import free_ports, tf_config  # noqa: E402 - after the path it is found on

PROGRAM = HERE / "programs" / "cluster" / "multiworker_mlp.py"
TFVIZ = Path(sys.executable).with_name("tfviz")
TARGET, GOAL, SKIP = 1.3, 1.1, 50


def step_time(command: list[str]) -> float:
    """Worker 0's median step time, in seconds, of one run of the two-worker job."""
    with tempfile.TemporaryDirectory() as logs:
        ports = free_ports(2)
        procs = []
        for i in range(2):
            env = {**os.environ, "TF_CONFIG": tf_config(ports, i)}
            procs.append(
                subprocess.Popen(
                    [*command, "--log", logs],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for p in procs:
            _, err = p.communicate(timeout=600)
            if p.returncode not in (0, 1):
                raise SystemExit(f"{command[0]} ended with {p.returncode}:\n{err[-3000:]}")
        ends = [float(x) for x in Path(logs, "worker-0.times").read_text().split()]
    gaps = [b - a for a, b in zip(ends[SKIP:], ends[SKIP + 1 :])]
    return statistics.median(gaps)


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    plain_cmd = [sys.executable, str(PROGRAM)]
    watched_cmd = [str(TFVIZ), "check", str(PROGRAM), "--until", "nan", "--"]
    plain, watched = [], []
    for _ in range(repeats):
        plain.append(step_time(plain_cmd))
        watched.append(step_time(watched_cmd))
    p, w = statistics.median(plain), statistics.median(watched)
    ratio = w / p
    verdict = "met" if ratio <= TARGET else "NOT met"
    goal = "met" if ratio <= GOAL else "not met"
    print(f"2 workers, MLP 32-128-128-10, batch 64 per worker, median of {repeats}, alternating:")
    print(f"  plain (python)         {p * 1000:7.2f} ms/step   {[round(x * 1000, 2) for x in plain]}")
    print(f"  watched (--until nan)  {w * 1000:7.2f} ms/step   {[round(x * 1000, 2) for x in watched]}")
    print(f"  ratio {ratio:.2f}x   target <= {TARGET}x: {verdict}   goal <= {GOAL}x: {goal}")


if __name__ == "__main__":
    main()
