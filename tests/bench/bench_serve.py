"""Benchmark: ``tfviz check`` with warm workers (``tfviz serve``) against a worker that
imports TensorFlow itself, on small bundled examples, as a pre-commit hook or CI runs one
check after another.

Each example is checked REPEATS times each way, alternating, through the installed command;
medians are printed with the ratio. The verdicts must be the same either way.

    .venv/bin/python tests/bench/bench_serve.py [REPEATS]      (default 3)
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TFVIZ = Path(sys.executable).with_name("tfviz")
EXAMPLES = [
    "kind_stop_gradient.py",
    "kind_frozen_copy_import.py",
    "healthy_batchnorm.py",
    "program_seed1_svd.py",
]
VARIABLE = "TFVIZ_WORKER_SERVER"


def check(example: str, server: str | None) -> tuple[float, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    if server:
        env[VARIABLE] = server
    start = time.perf_counter()
    done = subprocess.run(
        [str(TFVIZ), "check", "--json", str(ROOT / "resources" / "examples" / example)],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{example}: exit {done.returncode}: {done.stderr[-2000:]}")
    return took, [v["status"] for v in json.loads(done.stdout)["variables"]]


def main(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s")
        start = time.perf_counter()
        server = subprocess.Popen(
            [str(TFVIZ), "serve", "--socket", path],
            stdout=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        assert server.stdout is not None
        server.stdout.readline()
        print(f"tfviz serve ready in {time.perf_counter() - start:.1f} s (once)")
        try:
            print(f"{'example':32} {'started s':>10} {'warm s':>8} {'ratio':>6}  verdicts")
            for example in EXAMPLES:
                cold, warm, verdicts = [], [], set()
                for _ in range(repeats):
                    took, v = check(example, None)
                    cold.append(took)
                    verdicts.add(tuple(v))
                    took, v = check(example, path)
                    warm.append(took)
                    verdicts.add(tuple(v))
                c, w = statistics.median(cold), statistics.median(warm)
                same = "same" if len(verdicts) == 1 else "DIFFER"
                print(f"{example:32} {c:10.2f} {w:8.2f} {w / c:6.2f}  {same}")
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=30)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
