"""Benchmark: ``tfviz.check(loss)`` in a process that has imported TensorFlow and built the
model already (a notebook's), against that process's own forward pass plus ``tape.gradient``.

ResNet50 (``weights=None``, batch 1, 224x224), built and called once before anything is timed.
``import tfviz``, after TensorFlow's, imports its in-process analysis (networkx among it), and
is timed on its own line. The session's first check is timed alone (it probes the op
signatures it meets; later checks reuse those verdicts), then the bare step and the check
alternate ``--repeat`` times (3 unless told), so that a slow spell of the machine hits both;
the medians are compared. A process has one first check, so ``--first`` processes (5 unless
told, this one among them) each time theirs against the median of three bare steps taken
right after it, and the median of their ratios is the figure. Target: at most 1.5x. The
process's second step is TensorFlow's slower than its later ones too (its allocations still
take fresh pages): ``--second`` processes (3 unless told) time a bare second step against the
same baseline, printed beside the first checks as what they carry of TensorFlow's warm-up.
tfviz's bytecode is compiled first, as installing the package compiles it: where Python is
told not to write bytecode, each changed module would otherwise be compiled at every import.

    .venv/bin/python tests/bench/bench_api.py [--repeat N] [--first N] [--second N] [--model ResNet50]
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

TARGET = 1.5


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--first", type=int, default=5)
    ap.add_argument("--model", default="ResNet50")
    ap.add_argument("--second", type=int, default=3)
    ap.add_argument("--only-first", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only-second", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if not args.only_first:
        compileall.compile_dir(str(Path(__file__).resolve().parents[2] / "tfviz"), quiet=1)

    import numpy as np
    import tensorflow as tf

    t0 = time.perf_counter()
    import tfviz

    import_s = time.perf_counter() - t0

    model = getattr(tf.keras.applications, args.model)(weights=None, input_shape=(224, 224, 3), classes=1000)
    images = np.random.default_rng(0).random((1, 224, 224, 3), dtype=np.float32)
    labels = np.array([3])

    def loss():
        logits = model(images, training=True)
        return tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, logits))

    def bare() -> float:
        t0 = time.perf_counter()
        with tf.GradientTape() as tape:
            value = loss()
        tape.gradient(value, model.trainable_variables)
        return time.perf_counter() - t0

    bare()  # the model is built and has run once, as in a notebook
    if args.only_second:  # TensorFlow's own second step, where a first check would run
        second = bare()
        print(json.dumps({"second": second, "bare": statistics.median(bare() for _ in range(3))}))
        return
    t0 = time.perf_counter()
    first = tfviz.check(loss)  # the session's first check: tfviz's analysis imported, ops probed
    first_s = time.perf_counter() - t0
    assert first.ok, str(first)
    first_bare = statistics.median(bare() for _ in range(3))
    if args.only_first:
        print(json.dumps({"first": first_s, "bare": first_bare, "import": import_s}))
        return
    firsts = [(first_s, first_bare)]
    imports = [import_s]
    for _ in range(args.first - 1):
        said = _child("--only-first", args.model)
        firsts.append((said["first"], said["bare"]))
        imports.append(said["import"])
    seconds = []
    for _ in range(args.second):
        said = _child("--only-second", args.model)
        seconds.append((said["second"], said["bare"]))
    bares, checks = [], []
    for _ in range(args.repeat):
        bares.append(bare())
        t0 = time.perf_counter()
        report = tfviz.check(loss)
        checks.append(time.perf_counter() - t0)
        assert report.ok, str(report)
    b, c = statistics.median(bares), statistics.median(checks)
    ratios = [f / fb for f, fb in firsts]
    r = statistics.median(ratios)
    print(f"{args.model}, median of {args.repeat}, alternating:")
    print(f"  forward + tape.gradient (baseline)   {b:6.2f} s   {[round(x, 2) for x in bares]}")
    print(f"  tfviz.check(loss), again             {c:6.2f} s   {[round(x, 2) for x in checks]}")
    print(f"  ratio {c / b:.2f}x   target <= {TARGET}x: {'met' if c / b <= TARGET else 'NOT met'}")
    print(f"import tfviz (TensorFlow imported already), median of {len(imports)} processes:")
    print(f"  {statistics.median(imports):6.2f} s   {[round(x, 2) for x in imports]}")
    print(f"the session's first check, in {len(firsts)} processes (each against its own baseline):")
    for (f, fb), ratio in zip(firsts, ratios):
        print(f"  first check {f:6.2f} s   baseline {fb:6.2f} s   ratio {ratio:.2f}x")
    print(f"  median ratio {r:.2f}x   target <= {TARGET}x: {'met' if r <= TARGET else 'NOT met'}")
    if seconds:
        warm = [sb / lb for sb, lb in seconds]
        print(f"TensorFlow's own second step, where a first check runs, in {len(seconds)} processes:")
        for (sb, lb), ratio in zip(seconds, warm):
            print(f"  second bare step {sb:6.2f} s   baseline {lb:6.2f} s   ratio {ratio:.2f}x")
        carried = statistics.median(warm)
        print(f"  median ratio {carried:.2f}x (what a first check carries beside its own work)")


def _child(flag: str, model: str) -> dict[str, float]:
    """What a fresh process of this benchmark, run with ``flag``, timed (its last line)."""
    child = subprocess.run(
        [sys.executable, __file__, flag, "--model", model], capture_output=True, text=True, check=True
    )
    said: dict[str, float] = json.loads(child.stdout.strip().splitlines()[-1])
    return said


if __name__ == "__main__":
    main()
