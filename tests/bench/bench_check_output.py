"""Benchmark: `tfviz check` on a program that prints 50 MB before its step, against `python`.

The program prints 500,000 lines of 100 bytes, then makes one gradient step.
Both runs have their output read from pipes in 64 KB chunks, as a terminal
would. Target: tfviz at most 1.5x python (goal 1.1x).

    .venv/bin/python tests/bench/bench_check_output.py [MEGABYTES]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SCRIPT = """\
import tensorflow as tf

LINE = "x" * 91
for i in range({lines}):
    print(f"{{i:07d}} {{LINE}}")
w = tf.Variable(2.0)
with tf.GradientTape() as tape:
    loss = w * w
tape.gradient(loss, [w])
"""
TFVIZ = Path(sys.executable).with_name("tfviz")


def timed(cmd: list[str], cwd: Path) -> tuple[float, int]:
    """Seconds to run ``cmd`` with both pipes drained, and the bytes it wrote."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, stdin=subprocess.DEVNULL
    )
    sizes = [0, 0]

    def drain(stream, slot: int) -> None:
        while chunk := stream.read1(1 << 16):
            sizes[slot] += len(chunk)

    readers = [threading.Thread(target=drain, args=(s, i)) for i, s in enumerate((proc.stdout, proc.stderr))]
    for r in readers:
        r.start()
    for r in readers:
        r.join()
    proc.wait()
    return time.perf_counter() - start, sum(sizes)


def main() -> int:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        script = folder / "flood.py"
        script.write_text(SCRIPT.format(lines=megabytes * 10_000))
        python_s, python_bytes = timed([sys.executable, str(script)], folder)
        tfviz_s, tfviz_bytes = timed([str(TFVIZ), "check", str(script)], folder)
    print(f"program printing {megabytes} MB before its gradient step")
    print(f"{'':14}{'seconds':>9}{'MB out':>9}")
    print(f"{'python':14}{python_s:9.2f}{python_bytes / 1e6:9.1f}")
    print(f"{'tfviz check':14}{tfviz_s:9.2f}{tfviz_bytes / 1e6:9.1f}")
    ratio = tfviz_s / python_s
    print(f"ratio {ratio:.2f}x (target <= 1.5x, goal <= 1.1x): {'met' if ratio <= 1.5 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
