"""Benchmark: ``tfviz.check(loss)`` in a process that has imported TensorFlow and built the
model already (a notebook's), against that process's own forward pass plus ``tape.gradient``.

ResNet50 (``weights=None``, batch 1, 224x224), built and called once before anything is timed.
The session's first check is timed alone (it probes every op type's gradient; later checks
reuse those verdicts), then the bare step and the check alternate ``--repeat`` times (3
unless told), so that a slow spell of the machine hits both; the medians are compared.
Target: at most 1.5x.

    .venv/bin/python tests/bench/bench_api.py [--repeat N] [--model ResNet50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

TARGET = 1.5


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--model", default="ResNet50")
    args = ap.parse_args()

    import numpy as np
    import tensorflow as tf

    import tfviz

    model = getattr(tf.keras.applications, args.model)(weights=None, input_shape=(224, 224, 3), classes=1000)
    images = np.random.default_rng(0).random((1, 224, 224, 3), dtype=np.float32)
    labels = np.array([3])

    def loss():
        logits = model(images, training=True)
        return tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, logits))

    def bare() -> None:
        with tf.GradientTape() as tape:
            value = loss()
        tape.gradient(value, model.trainable_variables)

    bare()  # the model is built and has run once, as in a notebook
    t0 = time.perf_counter()
    first = tfviz.check(loss)  # the session's first check: every op's gradient probed
    first_s = time.perf_counter() - t0
    assert first.ok, str(first)
    bares, checks = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        bare()
        bares.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        report = tfviz.check(loss)
        checks.append(time.perf_counter() - t0)
        assert report.ok, str(report)
    b, c = statistics.median(bares), statistics.median(checks)
    met = "met" if c / b <= TARGET else "NOT met"
    print(f"{args.model}, median of {args.repeat}, alternating:")
    print(f"  forward + tape.gradient (baseline) {b:6.2f} s   {[round(x, 2) for x in bares]}")
    print(f"  tfviz.check(loss), again           {c:6.2f} s   {[round(x, 2) for x in checks]}")
    print(f"  ratio {c / b:.2f}x   target <= {TARGET}x: {met}")
    print(f"  the session's first check          {first_s:6.2f} s   ratio {first_s / b:.2f}x")


if __name__ == "__main__":
    main()
