"""Layout benchmark (not a test): our edge crossings against Graphviz ``dot``'s, and layout times.

Usage: .venv/bin/python tests/bench/bench_layout.py [--quick]

For ResNet50, MobileNetV2 and the stop_gradient Transformer (``resources/examples/``), in
one run, side by side:

- crossings of the *gradient view* (the on-path ops, as "only gradient paths" shows them)
  laid out flat, ours against plain ``dot`` (default effort, where it finishes within
  60 s), and the same for all ops. Target: ours <= 2x dot's;
- crossings of the app's grouped layout (each expanded group's children ordered on their
  own, edges projected to the lowest common group) for the layer-level default view and
  the fully expanded views, ours against ``dot`` on every group, no effort limits;
- layout time of the layer-level default view on a cold ``GraphLayout``, as the window
  opens it (``dot`` used for small groups when installed). Target: <= 50 ms.

A crossing is counted between adjacent layers, each dummy segment of a long edge like an
edge (:mod:`app.graph.layout.crossings`). Reports are made with ``tfviz export`` on first use and
cached in ``out/bench_layout/`` (a minute or so each). ``--quick`` skips the per-group
``dot`` runs of the fully expanded views (a few hundred processes).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.graph.layout import dot_order, layered  # noqa: E402
from app.graph.layout.placement import GraphLayout  # noqa: E402
from tfviz.analysisfile import load_analysis  # noqa: E402
from tfviz.report import Report  # noqa: E402
from tfviz.structure.hierarchy import Hierarchy, layer_names  # noqa: E402

MODELS = (
    ("ResNet50", "healthy_resnet50.py"),
    ("MobileNetV2", "healthy_mobilenet_v2.py"),
    ("Transformer", "transformer_stop_gradient.py"),
)
CACHE = ROOT / "out" / "bench_layout"
DOT_TIMEOUT_S = 60.0
CROSS_RATIO = 2.0
LAYER_VIEW_MS = 50.0


def report_for(script: str) -> Report | None:
    """The saved analysis of a bundled example, exported once into :data:`CACHE`."""
    out = CACHE / (Path(script).stem + ".json")
    if not out.exists():
        if not (ROOT / "resources" / "examples" / script).exists():
            return None
        CACHE.mkdir(parents=True, exist_ok=True)
        print(
            f"analyzing {script} with tfviz export (once, about a minute; cached in "
            f"{out.relative_to(ROOT)}) ...",
            flush=True,
        )
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tfviz.cli",
                "export",
                f"resources/examples/{script}",
                "-o",
                str(out),
                "--force",
            ],
            cwd=ROOT,
            capture_output=True,
            timeout=900,
        )
    return load_analysis(out) if out.exists() else None


def median_ms(f, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        runs.append((time.perf_counter() - t) * 1000)
    return sorted(runs)[len(runs) // 2]


def dot_crossings(jobs: dict) -> tuple[int | None, float]:
    """``dot``'s crossings summed over ``jobs`` (node lists, edges), and its wall time; None
    when ``dot`` is missing or any job did not finish within :data:`DOT_TIMEOUT_S`."""
    if not dot_order.dot_program():
        return None, 0.0
    t = time.perf_counter()
    total, keys = 0, list(jobs)
    for i in range(0, len(keys), dot_order.MAX_JOBS):
        batch = {
            k: (*jobs[k], dict.fromkeys(jobs[k][0], (170.0, 38.0))) for k in keys[i : i + dot_order.MAX_JOBS]
        }
        got = dot_order.dot_orderings(batch, timeout_s=DOT_TIMEOUT_S, effort=False)
        if len(got) < len(batch):
            return None, (time.perf_counter() - t) * 1000
        total += sum(layered.crossings(o) for o in got.values())
    return total, (time.perf_counter() - t) * 1000


def verdict(what: str, ours: int, dot: int | None) -> tuple[str, str]:
    """Ratio and verdict. The target is on the gradient views and the layer-level view
    the window opens on; the all-ops rows are for information (verdict in parentheses)."""
    if dot is None:
        return "-", "no dot"
    ratio = f"{ours / dot:.2f}" if dot else ("-" if ours == 0 else "inf")
    v = "ok" if ours <= CROSS_RATIO * dot else "over"
    return ratio, (v.upper() if v == "over" else v) if "all ops" not in what else f"({v})"


def flat_layout(nodes: list[str], edges: list[tuple[str, str]]) -> tuple[layered.Ordering, float]:
    """Our ordering of one flat graph and the median time of order + coordinates."""
    sizes = dict.fromkeys(nodes, (170.0, 38.0))
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        o = layered.order(nodes, edges)
        layered.coordinates(o, sizes)
        runs.append((time.perf_counter() - t) * 1000)
    return o, sorted(runs)[2]


def flat_rows(name: str, rep: Report) -> list[tuple]:
    rows = []
    for only_path, what in ((True, "gradient view, flat"), (False, "all ops, flat")):
        nodes = [o.id for o in rep.graph.ops if o.on_path or not only_path]
        keep = set(nodes)
        edges = [(e.src, e.dst) for e in rep.graph.edges if not e.back and e.src in keep and e.dst in keep]
        o, ms = flat_layout(nodes, edges)
        dot, dot_ms = dot_crossings({0: (nodes, edges)})
        rows.append((f"{name} {what}", len(nodes), layered.crossings(o), dot, ms, dot_ms, None))
    return rows


def first_problem(rep: Report) -> list[str]:
    """What the window opens on (``GraphView.first_problem``, without Qt)."""
    ids = {o.id for o in rep.graph.ops}
    for p in rep.problems:
        if p.op in ids and p.severity != "warning":
            return [p.op] + [f"var:{v}" for v in p.variables[:1] if f"var:{v}" in ids]
    return []


def grouped_rows(name: str, rep: Report, quick: bool) -> tuple[list[tuple], float, int]:
    """The app's grouped layout of three views: our crossings (every group ordered by us),
    ``dot``'s on every group, the median cold layout time, and the crossings as the window
    lays it out (``dot`` for the small groups ours leaves crossings in, when installed)."""
    h = Hierarchy(rep.graph, layer_names(rep.variables))
    default = h.default_expanded(focus=first_problem(rep)[:1])
    rows = []
    views = [
        (default, False, "layer-level view"),
        (set(h.groups), True, "expanded, gradient paths"),
        (set(h.groups), False, "expanded, all ops"),
    ]
    for expanded, only_path, what in views:
        runs = []
        for _ in range(5):
            gl = GraphLayout(h, use_dot=False)
            runs.append(gl.place(expanded, only_path).layout_s * 1000)
        ours = sum(layered.crossings(o) for o in gl._orderings.values())
        jobs = {}
        for gid, op in gl._orderings:
            kids = gl.visible_children(gid, op)
            jobs[gid] = (kids, gl._edges_among(gid, kids))
        dot, dot_ms = (None, 0.0) if quick and what != "layer-level view" else dot_crossings(jobs)
        app = GraphLayout(h)
        app.place(expanded, only_path)
        app_cross = sum(layered.crossings(o) for o in app._orderings.values())
        rows.append((f"{name} {what}", len(gl._orderings), ours, dot, sorted(runs)[2], dot_ms, app_cross))
    cold = [GraphLayout(h).place(default).layout_s * 1000 for _ in range(5)]
    return rows, sorted(cold)[2], len(default)


def main() -> int:
    quick = "--quick" in sys.argv
    have_dot = dot_order.dot_program() is not None
    print(
        f"Graphviz dot: {'installed' if have_dot else 'not installed (no dot columns)'}; "
        f"targets: on gradient views, ours <= {CROSS_RATIO:g}x dot's crossings where dot finishes in "
        f"{DOT_TIMEOUT_S:.0f} s (all-ops rows: for information, verdict in parentheses); "
        f"layer-level view laid out in <= {LAYER_VIEW_MS:.0f} ms\n"
    )
    head = (
        f"{'crossings':46} {'nodes':>6} {'ours':>6} {'dot':>6} {'ratio':>6} {'verdict':>8} "
        f"{'ours ms':>8} {'dot ms':>8} {'app':>5}"
    )
    flat, grouped, timing = [], [], []
    for name, script in MODELS:
        rep = report_for(script)
        if rep is None:
            print(f"{name}: no report ({script} missing or its analysis failed); skipped")
            continue
        flat += flat_rows(name, rep)
        rows, ms, n = grouped_rows(name, rep, quick)
        grouped += rows
        timing.append((name, n, ms))
    for title, rows in ((head, flat), (head.replace("nodes", "groups"), grouped)):
        print(title)
        for what, n, ours, dot, ms, dot_ms, app in rows:
            ratio, v = verdict(what, ours, dot)
            print(
                f"{what:46} {n:>6} {ours:>6} {dot if dot is not None else '-':>6} {ratio:>6} {v:>8} "
                f"{ms:>8.1f} {dot_ms:>8.0f} {app if app is not None else '':>5}"
            )
        print()
    print(f"{'layer-level view, cold layout as the app opens it':50} {'groups':>6} {'ms':>7} {'target':>7}")
    for name, n, ms in timing:
        ok = "ok" if ms <= LAYER_VIEW_MS else "MISSED"
        print(f"{name:50} {n:>6} {ms:>7.1f} {LAYER_VIEW_MS:>7.0f}  {ok}")
    print(
        "\nmedians of 5 runs. ours ms: order + coordinates (flat), a cold place() without dot (grouped);"
        " app: crossings as the window lays the view out (dot for small groups ours leaves"
        " crossings in, when installed)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
