"""Benchmark: does tfviz's cost grow with the model as the plain script's does?

Two model families grow in one run: an MLP of 10 to 500 Dense layers, and a Transformer
encoder of 1 to 12 blocks. At each size, side by side:

- the bare script: build the model, call ``tape.gradient`` once (``python bare.py``);
- ``tfviz check`` on the same script's ``loss()``: wall time and peak memory (RSS);
- their ratios, the graph's ops, and tfviz's own stages (``timings_s``: load, call, trace,
  probe, judge) with the judge's ops per second;
- the window's layout of the whole graph (every group expanded), in ops per second.

Target: the time ratio stays flat, within 10 % from the smallest size to the largest, so
tfviz's own work is linear in ops. The figures are printed, never bent. Each side runs
``--repeat`` times at each size (3 unless told), alternating, and the medians are compared:
one run of a 5-second script varies by more than the 10 % the target allows. The CPU
seconds of each side (user and system, the worker's included) are printed beside the wall
time, with their own ratio's growth: a slow spell of a shared machine stretches the wall
time of one side's runs, and much less their CPU time. The target is the wall time's.
Beside the ratio of the medians, the ``pairs`` column gives the lowest and highest ratio
of one ``tfviz check`` run to the bare run just before it: how far one run's figure can
wander on this machine.

    .venv/bin/python tests/bench/bench_scale.py [--family mlp|transformer|all] [--quick] [--repeat N]
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
sys.path.insert(0, str(ROOT))

MLP = """
import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((32,))] + [keras.layers.Dense(32, activation="tanh")
                                                  for _ in range({n})] + [keras.layers.Dense(1)])
x = tf.random.normal([16, 32])
y = tf.random.normal([16, 1])


def loss():
    return tf.reduce_mean((model(x) - y) ** 2)
"""
TRANSFORMER = """
import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
D, T = 64, 32


def block(x, i):
    h = keras.layers.MultiHeadAttention(4, D // 4, name=f"mha_{{i}}")(x, x)
    x = keras.layers.LayerNormalization(name=f"norm1_{{i}}")(x + h)
    h = keras.layers.Dense(4 * D, activation="gelu", name=f"ff1_{{i}}")(x)
    h = keras.layers.Dense(D, name=f"ff2_{{i}}")(h)
    return keras.layers.LayerNormalization(name=f"norm2_{{i}}")(x + h)


tokens = keras.Input((T,), dtype="int32")
x = keras.layers.Embedding(1000, D)(tokens)
for i in range({n}):
    x = block(x, i)
out = keras.layers.Dense(2)(keras.layers.GlobalAveragePooling1D()(x))
model = keras.Model(tokens, out)
ids = tf.random.uniform([8, T], maxval=1000, dtype=tf.int32)
labels = tf.random.uniform([8], maxval=2, dtype=tf.int32)
ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def loss():
    return ce(labels, model(ids))
"""
BARE = """
with tf.GradientTape() as tape:
    value = loss()
grads = tape.gradient(value, model.trainable_variables)
print(sum(g is not None for g in grads))
"""
#: Keras builds a Sequential recursively: at 1,000 layers the bare script itself stops with a
#: RecursionError, so the MLP ends at 500.
FAMILIES = {"mlp": (MLP, [10, 100, 300, 500]), "transformer": (TRANSFORMER, [1, 4, 12])}
QUICK = {"mlp": [10, 100, 300], "transformer": [1, 4]}


Run = tuple[float, float, int, str, float]


def run(cmd: list[str]) -> Run:
    """Wall seconds, peak RSS in MiB and exit code of one child process (its own waited-for
    children, the worker, included), what it printed, and its CPU seconds."""
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), out.read(), cpu


def _median(runs: list[Run]) -> Run:
    """The run of median wall time, with the median peak memory and CPU time of all of
    them; a failed run's exit code if any failed."""
    failed = [r for r in runs if r[2] not in (0, 1)]
    if failed:
        return failed[0]
    ordered = sorted(runs, key=lambda r: r[0])
    wall, _, code, out, _ = ordered[len(ordered) // 2]
    return wall, statistics.median(r[1] for r in runs), code, out, statistics.median(r[4] for r in runs)


def layout_rate(graph_json: str) -> tuple[int, float]:
    """Ops in the graph, and the window's layout of it (all groups expanded) in ops per second."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from app.graph.layout.placement import GraphLayout
    from tfviz.report import Report
    from tfviz.structure.hierarchy import Hierarchy, layer_names

    report = Report.from_dict(json.loads(Path(graph_json).read_text()))
    t0 = time.perf_counter()
    h = Hierarchy(report.graph, layer_names(report.variables))
    GraphLayout(h, use_dot=False).place(set(h.groups))
    return len(report.graph.ops), len(report.graph.ops) / max(time.perf_counter() - t0, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", choices=[*FAMILIES, "all"], default="all")
    ap.add_argument("--quick", action="store_true", help="the smaller sizes only")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side at each size (median)")
    args = ap.parse_args()
    families = list(FAMILIES) if args.family == "all" else [args.family]
    py = sys.executable
    tfviz = str(Path(py).with_name("tfviz"))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    header = (
        f"{'family':<12}{'size':>6}{'ops':>7}{'bare s':>8}{'tfviz s':>9}{'ratio':>7}{'pairs':>11}"
        f"{'bare MiB':>10}{'tfviz MiB':>10}{'ratio':>7}{'bare cpu':>9}{'tfviz cpu':>10}{'ratio':>7}"
        f"  {'load':>5}{'call':>6}{'trace':>7}{'probe':>6}{'judge':>6}{'judge op/s':>11}{'layout op/s':>12}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for family in families:
            template, sizes = FAMILIES[family]
            ratios, cpu_ratios = [], []
            print(header)
            for n in QUICK[family] if args.quick else sizes:
                script = os.path.join(tmp, f"{family}_{n}.py")
                bare = os.path.join(tmp, f"{family}_{n}_bare.py")
                graph = os.path.join(tmp, f"{family}_{n}_graph.json")
                Path(script).write_text(template.format(n=n))
                Path(bare).write_text(template.format(n=n) + BARE)
                bares, checks = [], []
                for _ in range(args.repeat):  # alternating, so that a slow spell hits both
                    bares.append(run([py, bare]))
                    checks.append(run([tfviz, "check", script, "--json", "--graph", graph]))
                b_wall, b_mem, b_code, _, b_cpu = _median(bares)
                if b_code != 0:
                    print(f"{family:<12}{n:>6}  the bare script itself fails (exit {b_code}): not compared")
                    continue
                t_wall, t_mem, code, out, t_cpu = _median(checks)
                t = json.loads(out).get("timings_s", {}) if code in (0, 1) else {}
                ops, layout = layout_rate(graph) if os.path.exists(graph) else (0, 0.0)
                paired = [c[0] / b[0] for b, c in zip(bares, checks) if b[2] == 0 and c[2] in (0, 1)]
                pairs = f"{min(paired):.2f}-{max(paired):.2f}" if paired else "-"
                judge = t.get("judge", 0.0)
                if code in (0, 1):
                    ratios.append(t_wall / b_wall)
                    cpu_ratios.append(t_cpu / b_cpu)
                print(
                    f"{family:<12}{n:>6}{ops:>7}{b_wall:>8.1f}{t_wall:>9.1f}"
                    f"{t_wall / b_wall:>7.2f}{pairs:>11}"
                    f"{b_mem:>10.0f}{t_mem:>10.0f}{t_mem / max(b_mem, 1):>7.2f}"
                    f"{b_cpu:>9.1f}{t_cpu:>10.1f}{t_cpu / b_cpu:>7.2f}  "
                    f"{t.get('load', 0):>5.1f}{t.get('call', 0):>6.1f}{t.get('trace', 0):>7.1f}"
                    f"{t.get('probe', 0):>6.1f}{judge:>6.2f}{ops / max(judge, 1e-9):>11.0f}"
                    f"{layout:>12.0f}" + ("" if code in (0, 1) else f"  exit {code}")
                )
            if len(ratios) < 2:
                print(f"{family}: too few sizes ran to compare\n")
                continue
            growth = ratios[-1] / ratios[0] - 1
            print(
                f"{family}: time ratio {ratios[0]:.2f} at the smallest, {ratios[-1]:.2f} at the largest:"
                f" {growth:+.0%} (target: within ±10 %); CPU time ratio {cpu_ratios[0]:.2f} to"
                f" {cpu_ratios[-1]:.2f}: {cpu_ratios[-1] / cpu_ratios[0] - 1:+.0%}\n"
            )


if __name__ == "__main__":
    main()
