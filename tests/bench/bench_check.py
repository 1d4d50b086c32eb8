"""Benchmark: the whole `tfviz check` process against a bare gradient script.

For each Keras application (weights=None, batch 1, 224x224) we time two
processes side by side in one run: a bare script that builds the model and
calls tape.gradient once, and `tfviz check` on a script that builds the same
model and defines the loss. Each side runs ``--repeat`` times (3 unless told), alternating,
so that a slow spell of the machine hits both; the medians are compared, and ``pairs``
gives the lowest and highest ratio of one ``tfviz check`` run to the bare run just before
it. Prints wall time, peak memory (max RSS) and the ratios. Targets on ResNet50: at most
2.0x the wall time (goal 1.5x) and 1.2x the memory (goal 1.1x). ``tfviz`` is the installed
command beside this Python.

    .venv/bin/python tests/bench/bench_check.py [--repeat N] [MobileNetV2 ResNet50 EfficientNetB0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL = """
import numpy as np
import tensorflow as tf

model = tf.keras.applications.{name}(weights=None, input_shape=(224, 224, 3), classes=1000)
images = np.random.default_rng(0).random((1, 224, 224, 3), dtype=np.float32)
labels = np.array([3])


def loss():
    logits = model(images, training=True)
    return tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, logits))
"""
BARE = """
with tf.GradientTape() as tape:
    value = loss()
grads = tape.gradient(value, model.trainable_variables)
print(len([g for g in grads if g is not None]))
"""


#: ResNet50's (target, goal) ratios to the bare script
TIME = (2.0, 1.5)
MEMORY = (1.2, 1.1)


def run(cmd: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MiB and exit code of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stderr.read().decode()[-2000:])
    return wall, usage.ru_maxrss / 1024, proc.returncode


def main(names: list[str], repeat: int) -> None:
    env_py = sys.executable
    tfviz = [str(Path(env_py).with_name("tfviz")), "check"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            script = os.path.join(tmp, f"{name.lower()}.py")
            bare = os.path.join(tmp, f"{name.lower()}_bare.py")
            with open(script, "w") as fh:
                fh.write(MODEL.format(name=name))
            with open(bare, "w") as fh:
                fh.write(MODEL.format(name=name) + BARE)
            bares, checks = [], []
            for _ in range(repeat):
                bares.append(run([env_py, bare]))
                checks.append(run([*tfviz, script]))
            pairs = [c[0] / b[0] for b, c in zip(bares, checks)]
            code = max((c[2] for c in checks), key=abs)
            rows.append(
                (
                    name,
                    statistics.median(b[0] for b in bares),
                    statistics.median(c[0] for c in checks),
                    statistics.median(b[1] for b in bares),
                    statistics.median(c[1] for c in checks),
                    code,
                    f"{min(pairs):.2f}-{max(pairs):.2f}",
                )
            )
    print(f"median of {repeat} runs each, alternating")
    print(
        f"{'model':<15}{'bare s':>8}{'tfviz s':>9}{'ratio':>7}{'pairs':>11}{'bare MiB':>10}"
        f"{'tfviz MiB':>10}{'ratio':>7}  verdict"
    )
    for name, bw, tw, bm, tm, code, span in rows:
        verdict = "ok" if code == 0 else f"exit {code}"
        print(
            f"{name:<15}{bw:>8.1f}{tw:>9.1f}{tw / bw:>7.2f}{span:>11}{bm:>10.0f}{tm:>10.0f}{tm / bm:>7.2f}"
            f"  {verdict}"
        )
    for name, bw, tw, bm, tm, _code, _span in rows:
        if name == "ResNet50":
            for what, ratio, (target, goal) in (("time", tw / bw, TIME), ("memory", tm / bm, MEMORY)):
                met = "goal met" if ratio <= goal else "target met" if ratio <= target else "missed"
                print(f"ResNet50 {what}: {ratio:.2f}x; target <= {target:.1f}x, goal <= {goal:.1f}x: {met}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=["MobileNetV2", "ResNet50", "EfficientNetB0"])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side (median)")
    args = ap.parse_args()
    main(args.names, args.repeat)
