"""Benchmark: how long ``tfviz check`` takes to end after Ctrl-C, SIGTERM or SIGHUP while the
program trains, through the installed command. Target: 1 s or less for each.

The program trains forever (``--step`` far past its end); each signal is sent once it runs,
REPEATS times; the median of each is printed beside the target.

    .venv/bin/python tests/bench/bench_interrupt.py [REPEATS]      (default 3)
"""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TFVIZ = Path(sys.executable).with_name("tfviz")
TARGET_S = 1.0
PROGRAM = """import tensorflow as tf

w = tf.Variable(1.0)
print("training", flush=True)
while True:
    with tf.GradientTape() as tape:
        loss = w * 2.0
    w.assign_sub(0.0 * tape.gradient(loss, w))
"""


def _once(script: Path, sig: signal.Signals) -> float:
    proc = subprocess.Popen(
        [str(TFVIZ), "check", str(script), "--step", "1000000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        # a shell's background job ignores SIGINT, and its children inherit that
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(8.0)  # TensorFlow imported, the program training
    start = time.monotonic()
    proc.send_signal(sig)
    proc.communicate(timeout=120)
    return time.monotonic() - start


def main() -> int:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "endless.py"
        script.write_text(PROGRAM)
        print(f"{'signal':<8} {'median s':>9} {'target s':>9}")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            took = statistics.median(_once(script, sig) for _ in range(repeats))
            print(f"{sig.name:<8} {took:>9.2f} {TARGET_S:>9.1f}{'' if took <= TARGET_S else '  MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
