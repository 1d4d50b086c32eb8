"""Benchmark: `tfviz check` on training programs against `python` running them.

The programs, in tests/bench/programs/, are written as their public originals are, with
synthetic data and ``weights=None``, each run to one training step:

- resnet50_fit.py: Keras ResNet50, a batch of 8 images, compile, one step of ``fit``;
- ocr_ctc_fit.py: Keras' captcha OCR example, a CTC loss added with ``add_loss``, ``fit``;
- vit_adamw_fit.py: Keras' Vision Transformer example, AdamW, ``fit``;
- fgsm_eager.py: TensorFlow's FGSM tutorial, the gradient for the input image, eagerly;
- bilstm_fit.py: Keras' stacked bidirectional LSTMs on IMDB-shaped data, ``fit``.

Each is run unchanged, in one run of this script, as two kinds of child process:

- plain:  python PROGRAM                 (the whole program: its one training step)
- tfviz:  tfviz check PROGRAM --json     (program mode: runs it up to its first
                                          gradient step, diagnoses it, stops it)

Each is run REPEATS times, alternating, so a slow spell on a shared machine
hits both; the table shows the median wall time and the median peak memory
(max RSS of the child and its descendants, from wait4), the ratios, and the median of
each stage tfviz reports in ``timings_s`` (docs/json.md), so the slow stage shows.
Targets: tfviz at most 1.5x plain python's wall time (goal 1.2x); ResNet50's also at most
1.2x its peak memory (goal 1.1x).

    .venv/bin/python tests/bench/bench_program.py [REPEATS] [PROGRAM ...]   (default 3, all)
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
PROGRAMS = ["resnet50_fit", "ocr_ctc_fit", "vit_adamw_fit", "fgsm_eager", "bilstm_fit"]
STAGES = ("start", "import", "load", "call", "trace", "probe", "judge")
TARGET, GOAL = 1.5, 1.2  # wall time against plain python's
MEM_TARGET, MEM_GOAL = 1.2, 1.1  # peak memory against plain python's


def tfviz_command() -> list[str]:
    """The `tfviz` console script of this interpreter's environment, as a user runs it."""
    script = os.path.join(os.path.dirname(sys.executable), "tfviz")
    if os.access(script, os.X_OK):
        return [script]
    return [sys.executable, "-m", "app.launch"]


def run(cmd: list[str], cwd: str) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS in MiB, exit code and stdout of one child process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        out.seek(0)
        err.seek(0)
        if code not in (0, 1):
            sys.stderr.write(err.read().decode(errors="replace")[-3000:])
        return wall, usage.ru_maxrss / 1024, code, out.read().decode(errors="replace")


def measure(name: str, repeats: int) -> dict:
    """One program's runs, alternating: medians, ratios and tfviz's stages."""
    program = os.path.join(HERE, "programs", name + ".py")
    cwd = os.path.dirname(program)
    plain_cmd = [sys.executable, program]
    tfviz_cmd = [*tfviz_command(), "check", program, "--json"]
    plain: list[tuple[float, float, int]] = []
    tfviz: list[tuple[float, float, int]] = []
    stages: list[dict] = []
    target = ""
    for i in range(repeats):
        for kind, cmd, runs in (("plain python", plain_cmd, plain), ("tfviz check", tfviz_cmd, tfviz)):
            wall, mem, code, out = run(cmd, cwd)
            runs.append((wall, mem, code))
            if runs is tfviz:
                try:
                    doc = json.loads(out)
                    stages.append(doc.get("timings_s") or {})
                    target = f"{doc.get('mode')}: {doc.get('target')}  ok={doc.get('ok')}"
                except ValueError:
                    target = "no JSON document (see stderr)"
            print(
                f"  {name} run {i + 1}/{repeats}  {kind:<13} {wall:6.1f} s  {mem:6.0f} MiB  exit {code}",
                file=sys.stderr,
                flush=True,
            )
    med = {k: statistics.median(s.get(k, 0.0) for s in stages) for k in STAGES if any(k in s for s in stages)}
    return {
        "name": name,
        "plain": plain,
        "tfviz": tfviz,
        "p_wall": statistics.median(r[0] for r in plain),
        "t_wall": statistics.median(r[0] for r in tfviz),
        "p_mem": statistics.median(r[1] for r in plain),
        "t_mem": statistics.median(r[1] for r in tfviz),
        "stages": med,
        "target": target,
    }


def main(repeats: int, names: list[str]) -> int:
    load_before = os.getloadavg()[0]
    rows = [measure(name, repeats) for name in names]
    load_after = os.getloadavg()[0]
    print(
        f"tfviz check against python, to the same first training step; median of {repeats} runs"
        f" each, alternating; {os.cpu_count()} CPUs, load average {load_before:.1f} -> {load_after:.1f}"
    )
    print(
        f"{'program':<16}{'tfviz s':>9}{'python s':>10}{'ratio':>8}"
        f"{'tfviz MiB':>11}{'python MiB':>12}  verdict"
    )
    failed = False
    for r in rows:
        ratio = r["t_wall"] / r["p_wall"]
        verdict = "goal met" if ratio <= GOAL else "target met" if ratio <= TARGET else "MISSED"
        print(
            f"{r['name']:<16}{r['t_wall']:>9.1f}{r['p_wall']:>10.1f}{ratio:>7.2f}x"
            f"{r['t_mem']:>11.0f}{r['p_mem']:>12.0f}  {verdict}"
        )
        failed |= (
            ratio > TARGET
            or any(x[2] != 0 for x in r["plain"])
            or any(x[2] not in (0, 1) for x in r["tfviz"])
        )
    print("\ntfviz stages (median s; docs/json.md says what each is):")
    for r in rows:
        print(f"  {r['name']:<16}" + ", ".join(f"{k} {v:.1f}" for k, v in r["stages"].items()))
    print("\ntfviz diagnosed:")
    for r in rows:
        print(f"  {r['name']:<16}{r['target']}")
    worst = max(rows, key=lambda r: r["t_wall"] / r["p_wall"])
    print(
        f"\nworst: {worst['name']} at {worst['t_wall'] / worst['p_wall']:.2f}x"
        f" (target <= {TARGET}x, goal <= {GOAL}x)"
    )
    for r in rows:
        if r["name"] == "resnet50_fit":
            mem_ratio = r["t_mem"] / r["p_mem"]
            verdict = "met" if mem_ratio <= MEM_TARGET else "MISSED"
            goal = "met" if mem_ratio <= MEM_GOAL else "not met"
            print(
                f"ResNet50 peak memory ratio {mem_ratio:.2f}x: target <= {MEM_TARGET:.2f}x ({verdict});"
                f" goal <= {MEM_GOAL:.2f}x ({goal})"
            )
            failed |= mem_ratio > MEM_TARGET
    return 1 if failed else 0


if __name__ == "__main__":
    argv = sys.argv[1:]
    count = int(argv.pop(0)) if argv and argv[0].isdigit() else 3
    sys.exit(main(count, argv or PROGRAMS))
