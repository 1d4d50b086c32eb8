"""Benchmark: what a session's first ``tfviz.check(loss)`` asks of the process's memory,
beside the bare step it checks (forward pass plus ``tape.gradient``).

ResNet50 (``weights=None``, 224x224), built and stepped twice in a fresh process, as in a
notebook; then one more bare step and the first check, each measured by how far it raised
the process's peak resident memory (``ru_maxrss``) and how many pages it took afresh from
the system (minor page faults, about 2.5 us each here). A check that keeps the call's
activations alive longer than the script's own tape does raises the peak by their size,
and takes that memory afresh in its backward pass. ``--runs`` fresh processes per batch
size (3 unless told), medians.

    .venv/bin/python tests/bench/bench_check_memory.py [--batch 1 8] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        _child(args.child)
        return
    print("ResNet50, a session's first check against a bare step in the same process:")
    print("  batch                       peak rise   fresh pages   wall")
    for batch in args.batch:
        said = [_run(batch) for _ in range(args.runs)]
        for who, label in (("bare", "bare step (baseline)"), ("check", "tfviz.check(loss)")):
            rise = statistics.median(s[who]["rise_mb"] for s in said)
            faults = statistics.median(s[who]["faults"] for s in said)
            wall = statistics.median(s[who]["wall"] for s in said)
            print(f"  {batch:<4d} {label:22s} {rise:7.1f} MB   {faults:9.0f}   {wall:5.2f} s")


def _run(batch: int) -> dict[str, dict[str, float]]:
    child = subprocess.run(
        [sys.executable, __file__, "--child", str(batch)], capture_output=True, text=True, check=True
    )
    said: dict[str, dict[str, float]] = json.loads(child.stdout.strip().splitlines()[-1])
    return said


def _child(batch: int) -> None:
    import resource
    import time

    import numpy as np
    import tensorflow as tf

    import tfviz

    model = tf.keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3), classes=1000)
    images = np.random.default_rng(0).random((batch, 224, 224, 3), dtype=np.float32)
    labels = np.full([batch], 3)

    def loss():
        logits = model(images, training=True)
        return tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, logits))

    def bare() -> None:
        with tf.GradientTape() as tape:
            value = loss()
        tape.gradient(value, model.trainable_variables)

    def measured(step) -> dict[str, float]:
        before = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        step()
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "rise_mb": (after.ru_maxrss - before.ru_maxrss) / 1024,
            "faults": after.ru_minflt - before.ru_minflt,
            "wall": wall,
        }

    bare()
    bare()  # the process's memory as a notebook's is after its model has stepped
    said = {"bare": measured(bare)}

    def check() -> None:
        report = tfviz.check(loss)
        assert report.ok, str(report)

    said["check"] = measured(check)
    print(json.dumps(said))


if __name__ == "__main__":
    main()
