"""Benchmark: what watching every gradient step costs (``tfviz check --until``).

Each program times its own training steps after a warm-up (so tracing is left out on both
sides) and prints the seconds per step. It runs twice per round, side by side:

- plain: ``python program.py``;
- watched: ``tfviz check program.py --until all`` (every rule on, the most expensive
  watch), which runs the same program to its end with each step measured.

Programs: a small custom loop (an MLP, a ``tf.function`` train step) and ResNet50's
``Model.fit`` (``weights=None``, 64x64 inputs). Target: a watched step takes at most 1.3x a
plain one; goal 1.1x. The figures are printed against them, never bent.

    .venv/bin/python tests/bench/bench_watch.py [--rounds 3] [--only small|resnet50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TFVIZ = Path(sys.executable).with_name("tfviz")
TARGET, GOAL = 1.3, 1.1

SMALL = """
import time
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(64, 32)).astype("float32")
y = np.random.default_rng(1).normal(size=(64, 1)).astype("float32")
model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(256, activation="relu"),
                          keras.layers.Dense(256, activation="relu"), keras.layers.Dense(1)])
opt = keras.optimizers.Adam(1e-3)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(xb, training=True) - yb) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for _ in range(30):
    train_step(x, y)
steps = 600
start = time.perf_counter()
for _ in range(steps):
    loss = train_step(x, y)
float(loss)
print(f"BENCH_STEP_S {(time.perf_counter() - start) / steps:.6f}")
"""

RESNET50 = """
import time
import keras
import numpy as np

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(128, 64, 64, 3)).astype("float32")
y = np.random.default_rng(1).integers(0, 10, size=(128,))
model = keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3), classes=10)
model.compile(optimizer=keras.optimizers.SGD(0.01), loss="sparse_categorical_crossentropy")
model.fit(x[:32], y[:32], batch_size=16, epochs=1, verbose=0)  # warm-up: the trace
start = time.perf_counter()
model.fit(x, y, batch_size=16, epochs=1, verbose=0)
print(f"BENCH_STEP_S {(time.perf_counter() - start) / 8:.6f}")
"""

PROGRAMS = {"small": SMALL, "resnet50": RESNET50}


def _step_seconds(text: str) -> float:
    for line in text.splitlines():
        if line.startswith("BENCH_STEP_S "):
            return float(line.split()[1])
    raise RuntimeError("the program printed no step time:\n" + text[-2000:])


def plain(path: Path) -> float:
    r = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=1800, cwd=path.parent
    )
    if r.returncode:
        raise RuntimeError(r.stderr[-3000:])
    return _step_seconds(r.stdout)


def watched(path: Path) -> tuple[float, int]:
    r = subprocess.run(
        [str(TFVIZ), "check", str(path), "--until", "all", "--json"],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=path.parent,
    )
    doc = json.loads(r.stdout)
    if r.returncode != 0 or not doc.get("watch"):
        raise RuntimeError(f"exit {r.returncode}: {r.stdout[-2000:]} {r.stderr[-2000:]}")
    return _step_seconds(doc["stdout"]), int(doc["watch"]["steps"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", choices=sorted(PROGRAMS))
    opts = ap.parse_args()
    names = [opts.only] if opts.only else list(PROGRAMS)
    print(f"watched training step against the plain step; target <= {TARGET}x, goal <= {GOAL}x")
    print(
        f"{'program':<10} {'plain s/step':>13} {'watched s/step':>15} {'ratio':>7}  {'rounds':>6}  steps"
        "  verdict"
    )
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path = Path(tmp) / f"bench_{name}.py"
            path.write_text(PROGRAMS[name])
            p, w, steps = [], [], 0
            for _ in range(opts.rounds):  # alternate, so a slow spell of the machine hits both
                p.append(plain(path))
                seconds, steps = watched(path)
                w.append(seconds)
            ps, ws = statistics.median(p), statistics.median(w)
            ratio = ws / ps
            verdict = "goal met" if ratio <= GOAL else "target met" if ratio <= TARGET else "MISSED"
            failed |= ratio > TARGET
            row = f"{name:<10} {ps:>13.5f} {ws:>15.5f} {ratio:>6.2f}x  {opts.rounds:>6}  {steps:>5}"
            row += f"  {verdict}"
            print(row, flush=True)
    print(f"(machine: {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
