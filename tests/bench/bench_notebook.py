"""Benchmark: a large notebook, ``tfviz check`` against ``python`` on the same code.

Makes a notebook of ``--cells`` one-line code cells (default 200,000) between a cell that
makes a variable and one that defines ``loss()``, and the same code as one ``.py`` file.
Prints, best of ``--repeat``:

* ``python`` on the ``.py`` file (TensorFlow's import included: the baseline);
* ``tfviz check`` on the ``.py`` file and on the notebook, each with its ratio to python.

Before: 272 s for the notebook (python: 27 s on its code), measured when the issue was
filed; then 40 s against 4.2 s. Goal: linear in the cells, and near python's time.

    .venv/bin/python tests/bench/bench_notebook.py [--cells N] [--repeat R]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

BIN = Path(sys.executable).parent
HEAD = "import tensorflow as tf\nw = tf.Variable(1.0)"
TAIL = "def loss():\n    return w * 2.0"


def timed(cmd: list[str], cwd: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    middle = [f"x{i} = {i}" for i in range(args.cells)]
    with tempfile.TemporaryDirectory() as tmp:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(c) for c in (HEAD, *middle, TAIL)]
        nbformat.write(nb, str(Path(tmp) / "big.ipynb"))
        Path(tmp, "big.py").write_text("\n".join((HEAD, *middle, TAIL)) + "\n")
        # python runs the script as __main__; tfviz calls loss() on what it made
        runs = {
            "python big.py": [str(BIN / "python"), "big.py"],
            "tfviz check big.py": [str(BIN / "tfviz"), "check", "big.py"],
            "tfviz check big.ipynb": [str(BIN / "tfviz"), "check", "big.ipynb"],
        }
        best = {name: min(timed(cmd, tmp) for _ in range(args.repeat)) for name, cmd in runs.items()}
    base = best["python big.py"]
    print(f"{args.cells:,} one-line cells, best of {args.repeat}")
    for name, s in best.items():
        print(f"  {name:24} {s:6.1f} s  ({s / base:.2f}x python)")


if __name__ == "__main__":
    main()
