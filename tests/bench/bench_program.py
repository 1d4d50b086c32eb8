"""Benchmark: `tfviz check` on a training program against `python` running it.

The program is tests/bench/programs/resnet50_fit.py: Keras ResNet50
(weights=None), a synthetic batch of 8 images, compile, and
`fit(..., epochs=1, steps_per_epoch=1)`. It is run unchanged, in one run of
this script, as two kinds of child process:

- plain:  python resnet50_fit.py                 (the whole program: one training step)
- tfviz:  tfviz check resnet50_fit.py --json     (program mode: runs it up to its first
                                                  gradient step, diagnoses it, stops it)

Each is run REPEATS times, alternating, so a slow spell on a shared machine
hits both; the table shows the median wall time and the median peak memory
(max RSS of the child and its descendants, from wait4) and the ratios.
Targets: tfviz at most 1.5x plain python's wall time (goal 1.2x), and at most 1.2x its
peak memory (goal 1.1x).

    .venv/bin/python tests/bench/bench_program.py [REPEATS]      (default 3)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "programs", "resnet50_fit.py")
TARGET, GOAL = 1.5, 1.2  # wall time against plain python's
MEM_TARGET, MEM_GOAL = 1.2, 1.1  # peak memory against plain python's


def tfviz_command() -> list[str]:
    """The `tfviz` console script of this interpreter's environment, as a user runs it."""
    script = os.path.join(os.path.dirname(sys.executable), "tfviz")
    if os.access(script, os.X_OK):
        return [script]
    return [sys.executable, "-m", "app.launch"]


def run(cmd: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS in MiB, exit code and stdout of one child process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=os.path.dirname(PROGRAM))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        out.seek(0)
        err.seek(0)
        if code not in (0, 1):
            sys.stderr.write(err.read().decode(errors="replace")[-3000:])
        return wall, usage.ru_maxrss / 1024, code, out.read().decode(errors="replace")


def main(repeats: int) -> int:
    plain_cmd = [sys.executable, PROGRAM]
    tfviz_cmd = [*tfviz_command(), "check", PROGRAM, "--json"]
    plain: list[tuple[float, float, int]] = []
    tfviz: list[tuple[float, float, int]] = []
    stages: list[dict] = []
    target = ""
    load_before = os.getloadavg()[0]
    for i in range(repeats):
        wall, mem, code, _ = run(plain_cmd)
        plain.append((wall, mem, code))
        print(
            f"  run {i + 1}/{repeats}  plain python  {wall:6.1f} s  {mem:6.0f} MiB  exit {code}",
            file=sys.stderr,
            flush=True,
        )
        wall, mem, code, out = run(tfviz_cmd)
        tfviz.append((wall, mem, code))
        try:
            doc = json.loads(out)
            stages.append(doc.get("timings_s") or {})
            target = f"{doc.get('mode')}: {doc.get('target')}  ok={doc.get('ok')}"
        except ValueError:
            target = "no JSON document (see stderr)"
        print(
            f"  run {i + 1}/{repeats}  tfviz check   {wall:6.1f} s  {mem:6.0f} MiB  exit {code}",
            file=sys.stderr,
            flush=True,
        )
    load_after = os.getloadavg()[0]

    p_wall = statistics.median(r[0] for r in plain)
    t_wall = statistics.median(r[0] for r in tfviz)
    p_mem = statistics.median(r[1] for r in plain)
    t_mem = statistics.median(r[1] for r in tfviz)
    ratio = t_wall / p_wall
    print(
        f"ResNet50 fit program, batch 8, 224x224, 1000 classes; median of {repeats} runs each, "
        f"{os.cpu_count()} CPUs, load average {load_before:.1f} -> {load_after:.1f}"
    )
    print(f"{'':<22}{'tfviz check':>12}{'plain python':>14}{'ratio':>8}")
    print(f"{'wall time, s':<22}{t_wall:>12.1f}{p_wall:>14.1f}{ratio:>7.2f}x")
    print(f"{'peak memory, MiB':<22}{t_mem:>12.0f}{p_mem:>14.0f}{t_mem / p_mem:>7.2f}x")
    print(
        f"each run (s): tfviz {', '.join(f'{r[0]:.1f}' for r in tfviz)};"
        f" plain {', '.join(f'{r[0]:.1f}' for r in plain)}"
        f"  (exit codes: tfviz {', '.join(str(r[2]) for r in tfviz)};"
        f" plain {', '.join(str(r[2]) for r in plain)})"
    )
    if stages:
        keys = [k for k in ("import", "load", "call", "trace", "probe", "judge") if k in stages[0]]
        med = {k: statistics.median(s.get(k, 0.0) for s in stages) for k in keys}
        print("tfviz stages (median s): " + ", ".join(f"{k} {v:.1f}" for k, v in med.items()))
    print(f"tfviz diagnosed: {target}")
    mem_ratio = t_mem / p_mem
    rows = (("time", ratio, TARGET, GOAL), ("memory", mem_ratio, MEM_TARGET, MEM_GOAL))
    for what, value, target_, goal_ in rows:
        verdict = "met" if value <= target_ else "MISSED"
        goal = "met" if value <= goal_ else "not met"
        print(f"target: {what} ratio <= {target_:.2f}x ({verdict}); goal <= {goal_:.2f}x ({goal})")
    failed = any(r[2] != 0 for r in plain) or any(r[2] not in (0, 1) for r in tfviz)
    return 1 if failed or ratio > TARGET or mem_ratio > MEM_TARGET else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
