"""Variable discovery on a script that keeps large plain data in its globals.

    .venv/bin/python tests/bench/bench_discovery.py

Prints the time to find the variables next to the 0.5 s target and to the
unbounded walk (every list element visited), measured in the same run.
"""

from __future__ import annotations

import statistics
import time
import types

TARGET_S = 0.5


def main() -> None:
    import tensorflow as tf

    import tfviz.script.discover as discover
    from tfviz.script.discover import find_variables

    module = types.ModuleType("big")
    module.samples = [float(i) for i in range(3_000_000)]
    module.columns = {"a": [0.5] * 1_000_000, "b": list(range(1_000_000))}
    module.model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3)])
    times = []
    for _ in range(5):
        start = time.perf_counter()
        found = find_variables(module)
        times.append(time.perf_counter() - start)
    bounded, plain = discover._MAX_CHILDREN, discover._plain_data
    discover._MAX_CHILDREN, discover._plain_data = 10**9, lambda items: False
    start = time.perf_counter()
    find_variables(module)
    unbounded = time.perf_counter() - start
    discover._MAX_CHILDREN, discover._plain_data = bounded, plain
    print(f"{'measure':<44}{'tfviz':>10}{'unbounded':>11}{'target':>10}")
    print(
        f"{'find_variables, 3M floats + 2M list items':<44}{statistics.median(times):>9.3f}s"
        f"{unbounded:>10.1f}s{TARGET_S:>9.1f}s"
    )
    print(f"variables found: {[f.path for f in found]}")


if __name__ == "__main__":
    main()
