"""Benchmark: a warm re-run (F5, re-run on save) against the plain script's own run.

The window keeps spare workers that have imported TensorFlow already, so a second analysis
of a script starts at once. This times that analysis, from the request to the answer, in a
worker that has said ``ready`` (the window's spare), against ``python`` running the plain
script from scratch, for:

- the ResNet50 ``loss()`` script of ``bench_check.py`` (plain: build + one ``tape.gradient``);
- the ResNet50 ``fit`` program of ``bench_program.py`` (plain: the program, one step).

Each is run REPEATS times, alternating; medians are printed. Target: the warm re-run costs
no more than the plain script's run (ratio <= 1.0).

    .venv/bin/python tests/bench/bench_warm.py [REPEATS]      (default 3)
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from bench_check import BARE, MODEL  # noqa: E402
from bench_program import PROGRAM, run  # noqa: E402

from tfviz.worker.client import WorkerClient  # noqa: E402
from tfviz.worker.messages import Ready, Result  # noqa: E402

TARGET = 1.0


def warm_analysis(script: str, run_program: bool) -> float:
    """Seconds from the request to the answer in a worker that is ready."""
    client = WorkerClient()
    try:
        if not isinstance(client.wait_ready(), Ready):
            raise SystemExit("the worker did not start")
        start = time.perf_counter()
        answer = client.analyze({"cmd": "analyze", "script": script, "target": None, "run": run_program})
        took = time.perf_counter() - start
        if not isinstance(answer, Result):
            raise SystemExit(f"{script}: {answer}")
        return took
    finally:
        client.close()


def main(repeats: int) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        loss_script, bare = os.path.join(tmp, "resnet50.py"), os.path.join(tmp, "resnet50_bare.py")
        Path(loss_script).write_text(MODEL.format(name="ResNet50"))
        Path(bare).write_text(MODEL.format(name="ResNet50") + BARE)
        for label, script, plain, program in (
            ("ResNet50 loss()", loss_script, bare, False),
            ("ResNet50 fit program", PROGRAM, PROGRAM, True),
        ):
            plain_s, warm_s = [], []
            for _ in range(repeats):
                plain_s.append(run([sys.executable, plain])[0])
                warm_s.append(warm_analysis(script, program))
            rows.append((label, statistics.median(plain_s), statistics.median(warm_s)))
    print(f"{'script':<22}{'plain s':>9}{'warm re-run s':>15}{'ratio':>7}  verdict (target <= {TARGET:.1f})")
    for label, p, w in rows:
        verdict = "met" if w / p <= TARGET else "MISSED"
        print(f"{label:<22}{p:>9.1f}{w:>15.1f}{w / p:>7.2f}  {verdict}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
