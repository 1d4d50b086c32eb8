"""Benchmark: every row of tfviz's cost against the plain script, in one run.

Runs, one after another (never side by side: each measures wall time and memory):

1. ``bench_check.py ResNet50``: ``tfviz check`` on a ``loss()`` script against a bare build
   plus ``tape.gradient`` (target 2.0x time, goal 1.5x; memory 1.2x);
2. ``bench_program.py``: a ResNet50 ``fit`` program against ``python`` running it
   (target 1.5x time, 1.2x memory);
3. ``bench_warm.py``: a warm re-run in the window against the plain script (target 1.0x);
4. ``bench_scale.py``: tfviz's ratio as an MLP and a Transformer grow (flat within 10 %).

    .venv/bin/python tests/bench/bench_speed.py [--quick]     (make bench)

``--quick`` takes one repeat each and the scale table's smaller sizes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(quick: bool) -> int:
    repeats = "1" if quick else "3"
    parts = [
        ("loss() mode, ResNet50", ["bench_check.py", "ResNet50", "--repeat", repeats]),
        ("program mode, ResNet50 fit", ["bench_program.py", repeats]),
        ("warm re-run", ["bench_warm.py", repeats]),
        ("scale", ["bench_scale.py", "--repeat", repeats, *(["--quick"] if quick else [])]),
    ]
    failed = 0
    for title, (script, *args) in parts:
        print(f"== {title} ({script} {' '.join(args)})", flush=True)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, str(HERE / script), *args]).returncode
        failed += code != 0
        print(
            f"   ({time.perf_counter() - start:.0f} s{'' if code == 0 else f', exit {code}'})\n", flush=True
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main("--quick" in sys.argv[1:]))
