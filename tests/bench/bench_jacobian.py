"""Benchmark: tfviz's Jacobian against tape.jacobian (pfor) and a naive loop.

Side by side in one process, for y = tanh(W x) with n = m = 500 and 2000
(J(y, x): m x n) and for a conv layer (J(tanh(conv(img, K)), img)):

- tfviz: ``Session.jacobian`` on an analyzed script, end to end from the
  request to the answer encoded as the worker sends it (base64). "cold" is
  the first request for the pair (it traces the step), "warm" a repeat;
- ``tape.jacobian`` (pfor), eagerly, as a user calls it (it traces its
  pfor loop on every call);
- the seed-3 approach: one ``tape.gradient`` per output element. At 2000
  the loop takes minutes, so a sample of rows is timed and extrapolated
  (marked "~", with the sample size).

Targets: tfviz cold at most 1.2x tape.jacobian; at least 100x faster than
the naive loop at 2000x2000. The figures are reported, never bent.

    .venv/bin/python tests/bench/bench_jacobian.py [--sample 40] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

DENSE = """
import tensorflow as tf
W = tf.Variable(tf.random.stateless_normal([{n}, {n}], seed=[1, 2]) / {n} ** 0.5, name="W")
x = tf.Variable(tf.random.stateless_normal([{n}], seed=[3, 4]), name="x")
def forward():
    return tf.tanh(tf.linalg.matvec(W, x), name="y")
def loss():
    return tf.reduce_sum(forward() ** 2)
"""
CONV = """
import tensorflow as tf
img = tf.Variable(tf.random.stateless_normal([1, 16, 16, 3], seed=[1, 2]), name="img")
K = tf.Variable(tf.random.stateless_normal([3, 3, 3, 8], seed=[3, 4]) * 0.2, name="K")
def forward():
    return tf.tanh(tf.nn.conv2d(img, K, strides=1, padding="SAME"), name="y")
def loss():
    return tf.reduce_sum(forward() ** 2)
"""


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def bench(label: str, source: str, wrt: str, sample: int, repeat: int) -> dict:
    import numpy as np
    import tensorflow as tf

    from tfviz.analysis.diagnose import analysis as analyzed
    from tfviz.jacobian.data import Jacobian
    from tfviz.jacobian.session import Session

    folder = tempfile.mkdtemp(prefix="tfviz-bench-jac-")
    path = os.path.join(folder, "model.py")
    with open(path, "w") as fh:
        fh.write(source)
    t = time.perf_counter()
    session = Session.from_analysis(analyzed(path))
    analysis = time.perf_counter() - t

    def ours():
        j = session.jacobian("y", wrt)
        return j, j.to_dict()  # as the worker encodes it

    cold, (j, _) = timed(ours)
    warm, _ = timed(ours, repeat)
    import runpy

    ns = runpy.run_path(path)
    src = ns[wrt]

    def pfor():
        with tf.GradientTape() as tape:
            y = ns["forward"]()
        return tape.jacobian(y, src).numpy()

    pfor_s, want = timed(pfor, repeat)
    assert np.allclose(Jacobian.from_dict(j.to_dict()).array(), want, atol=1e-5), label
    n_out = int(np.prod(want.shape[: len(want.shape) - len(src.shape)]))
    rows = min(sample, n_out)

    def naive():
        with tf.GradientTape(persistent=True) as tape:
            flat = tf.reshape(ns["forward"](), [-1])
            parts = [flat[i] for i in range(rows)]
        return [tape.gradient(p, src) for p in parts]

    loop_s, _ = timed(naive)
    loop_total = loop_s * n_out / rows
    return {
        "case": label,
        "shape": "x".join(map(str, want.shape)),
        "mode": j.mode,
        "analysis": analysis,
        "cold": cold,
        "warm": warm,
        "pfor": pfor_s,
        "loop": loop_total,
        "loop_note": "" if rows == n_out else f"~ ({rows} rows timed)",
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sample", type=int, default=40, help="rows of the naive loop timed at 2000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--sizes", default="500,2000")
    args = p.parse_args()
    from tfviz.script.quiet import import_tensorflow

    import_tensorflow()
    rows = [
        bench(f"tanh(Wx) n={n}", DENSE.format(n=n), "x", n if n <= 500 else args.sample, args.repeat)
        for n in map(int, args.sizes.split(","))
    ]
    rows.append(bench("conv 16x16x3 -> 8", CONV, "img", 2048, args.repeat))
    head = (
        f"{'case':<20}{'J shape':<18}{'mode':<9}{'tfviz cold':>11}{'warm':>8}{'pfor':>8}"
        f"{'cold/pfor':>10}{'naive loop':>13}{'loop/cold':>11}"
    )
    print(head)
    for r in rows:
        print(
            f"{r['case']:<20}{r['shape']:<18}{r['mode']:<9}{r['cold']:>10.3f}s{r['warm']:>7.3f}s"
            f"{r['pfor']:>7.3f}s{r['cold'] / r['pfor']:>9.2f}x{r['loop']:>12.2f}s"
            f"{r['loop'] / r['cold']:>10.0f}x {r['loop_note']}"
        )
    print(
        "(analysis before the first request, not counted: "
        + ", ".join(f"{r['case']} {r['analysis']:.2f}s" for r in rows)
        + ")"
    )
    big = next((r for r in rows if r["case"].endswith("2000")), None)
    ok = all(r["cold"] <= 1.2 * r["pfor"] for r in rows) and (big is None or big["loop"] >= 100 * big["cold"])
    print("targets (cold <= 1.2x pfor; >= 100x the naive loop at 2000):", "met" if ok else "NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
