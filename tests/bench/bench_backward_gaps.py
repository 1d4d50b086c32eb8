"""Benchmark: what Python run between a backward pass's kernels costs TensorFlow's own kernels.

A check measures each gradient as the tape hands it to the next op's gradient function, so
some Python runs between every two of the pass's kernels. This times ResNet50's bare
backward pass (``weights=None``, batch 1) with a busy pause of N microseconds before each
gradient function, and with each gradient it is handed measured there instead (as a check
measures it), alternating, medians of ``--repeat`` rounds. It prints the time inside
TensorFlow's gradient functions beside the pass with no pause (the baseline): what a pause
costs them beyond its own length is the kernels' slowdown. Then it times the same gradient
functions inside ``tfviz.check(loss)``'s backward pass, alternating with the bare pass (the
check's first run left out: it asks some gradient functions once more).

    .venv/bin/python tests/bench/bench_backward_gaps.py [--repeat N] [--pauses 0 10 30 100]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

#: the pause that is no pause: each gradient the function is handed measured, as a check does
MEASURE = -1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--pauses", type=int, nargs="+", default=[0, 10, 30, 100])
    args = ap.parse_args()
    pauses = sorted(set(args.pauses) | {0}) + [MEASURE]

    import numpy as np
    import tensorflow as tf
    from tensorflow.python import pywrap_tfe
    from tensorflow.python.eager import backprop

    original = backprop._gradient_function
    inside = [0.0]
    calls = [0]

    from tfviz.engine.trace import sq_norm_of

    def pausing(pause_us: int) -> Callable[..., Any]:
        def gradient_function(*a: Any) -> Any:
            if pause_us == MEASURE:  # what a check does there: each gradient handed over measured
                for g in a[5]:
                    if g is not None:
                        sq_norm_of(g)
            elif pause_us:
                end = time.perf_counter() + pause_us * 1e-6
                while time.perf_counter() < end:
                    pass
            t0 = time.perf_counter()
            try:
                return original(*a)
            finally:
                inside[0] += time.perf_counter() - t0
                calls[0] += 1

        return gradient_function

    model = tf.keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3), classes=1000)
    images = np.random.default_rng(0).random((1, 224, 224, 3), dtype=np.float32)
    labels = np.array([3])

    def backward(pause_us: int) -> tuple[float, float]:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(
                tf.keras.losses.sparse_categorical_crossentropy(labels, model(images, training=True))
            )
        pywrap_tfe.TFE_Py_RegisterGradientFunction(pausing(pause_us))
        inside[0], calls[0] = 0.0, 0
        try:
            t0 = time.perf_counter()
            tape.gradient(loss, model.trainable_variables)
            return time.perf_counter() - t0, inside[0]
        finally:
            pywrap_tfe.TFE_Py_RegisterGradientFunction(original)

    backward(0)
    backward(0)
    rounds: dict[int, list[tuple[float, float]]] = {p: [] for p in pauses}
    order, rng = list(pauses), random.Random(0)
    for _ in range(args.repeat):
        rng.shuffle(order)
        for p in order:
            rounds[p].append(backward(p))
    n = calls[0]
    base_pass = statistics.median(r[0] for r in rounds[0])
    base_inside = statistics.median(r[1] for r in rounds[0])
    print(f"ResNet50's backward pass, {n} gradient functions, median of {args.repeat} rounds, alternating:")
    print("  pause before each   whole pass   in the gradient functions   their slowdown, per call")
    for p in pauses:
        whole = statistics.median(r[0] for r in rounds[p])
        within = statistics.median(r[1] for r in rounds[p])
        slower = (within - base_inside) / n * 1e6
        label = "none (baseline)" if p == 0 else "each norm" if p == MEASURE else f"{p} us"
        print(f"  {label:17s}   {whole:8.3f} s   {within:8.3f} s                  {slower:+6.1f} us")
    print(f"  baseline: the pass {base_pass:.3f} s, its gradient functions {base_inside:.3f} s")

    import tfviz

    def check() -> float:
        backprop._gradient_function = pausing(0)  # what the check's watch wraps as it is entered
        inside[0] = 0.0
        try:
            tfviz.check(
                lambda: tf.reduce_mean(
                    tf.keras.losses.sparse_categorical_crossentropy(labels, model(images, training=True))
                )
            )
        finally:
            backprop._gradient_function = original
        return inside[0]

    check()
    bare, checked = [], []
    for _ in range(args.repeat):
        bare.append(backward(0)[1])
        checked.append(check())
    b, c = statistics.median(bare), statistics.median(checked)
    print(f"the same gradient functions, median of {args.repeat} rounds, alternating:")
    print(f"  in the bare backward pass (baseline)   {b:.3f} s")
    per_call = (c - b) / n * 1e6
    print(f"  in tfviz.check(loss)'s backward pass   {c:.3f} s   ({c - b:+.3f} s, {per_call:+.1f} us a call)")


if __name__ == "__main__":
    main()
