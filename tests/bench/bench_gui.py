"""GUI benchmark (not a test): paint and layout times against the targets of issue #3.

Usage: python tests/bench/bench_gui.py [REPORT.json]
A Report JSON with a full graph (``tfviz check --graph``) is used as the
ResNet case when given (or when out/resnet50_graph.json exists); otherwise a
ResNet-shaped graph is synthesised.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from PySide6.QtWidgets import QApplication  # noqa: E402

from app import layout  # noqa: E402
from app.graph_view import GraphView  # noqa: E402
from tfviz.report import GraphDoc, GraphEdge, GraphOp, Report  # noqa: E402


class _G:
    def __init__(self):
        self.ops: list[GraphOp] = []
        self.edges: list[GraphEdge] = []

    def op(self, name: str, typ: str, scope: str, inputs=(), status="passes") -> str:
        self.ops.append(GraphOp(name, name.rsplit("/", 1)[-1], typ, scope, on_path=True, status=status,
                                grad_norm=1e-3 * (1 + len(self.ops) % 97)))
        for i, src in enumerate(inputs):
            self.edges.append(GraphEdge(src, name, 0, i, "float32", [None, 7, 7, 64], status="passes",
                                        grad_norm=1e-3 * (1 + len(self.edges) % 89)))
        return name

    def report(self, name: str) -> Report:
        return Report(script=name, target="loss", graph=GraphDoc(self.ops, self.edges))


def _conv_bn(g: _G, scope: str, x: str, act: str = "Relu") -> str:
    w = g.op(f"{scope}/kernel", "ReadVariableOp", scope)
    c = g.op(f"{scope}/conv", "Conv2D", scope, [x, w])
    for k in ("gamma", "beta", "mean", "var"):
        g.op(f"{scope}/bn/{k}", "ReadVariableOp", f"{scope}/bn")
    b = g.op(f"{scope}/bn/FusedBatchNormV3", "FusedBatchNormV3", f"{scope}/bn",
             [c] + [f"{scope}/bn/{k}" for k in ("gamma", "beta", "mean", "var")])
    return g.op(f"{scope}/{act.lower()}", act, scope, [b]) if act else b


def resnet_like(blocks: int = 54, unit_ops: int = 22) -> Report:
    """~3,700 ops: bottleneck blocks (3 conv/bn/relu + shortcut + add) in stage/block scopes."""
    g = _G()
    x = g.op("input", "Placeholder", "")
    for b in range(blocks):
        scope = f"resnet/stage{b // 12 + 2}/block{b % 12 + 1}"
        y = x
        for i in range(3):
            y = _conv_bn(g, f"{scope}/conv{i + 1}", y, "Relu" if i < 2 else "")
        sc = _conv_bn(g, f"{scope}/shortcut", x, "") if b % 12 == 0 else x
        a = g.op(f"{scope}/add", "AddV2", scope, [y, sc])
        x = g.op(f"{scope}/out", "Relu", scope, [a])
        for k in range(unit_ops):  # training-step clutter: shape/assign ops per block
            g.op(f"{scope}/aux/op{k}", "Shape" if k % 2 else "Identity", f"{scope}/aux",
                 [x] if k == 0 else [f"{scope}/aux/op{k - 1}"])
    g.op("__target__", "Target", "", [g.op("loss", "Mean", "", [x])])
    return g.report("resnet_like")


def mobilenet_like(blocks: int = 17) -> Report:
    g = _G()
    x = g.op("input", "Placeholder", "")
    for b in range(blocks):
        s = f"mobilenet/block{b}"
        y = _conv_bn(g, f"{s}/expand", x, "Relu6")
        y = _conv_bn(g, f"{s}/depthwise", y, "Relu6")
        y = _conv_bn(g, f"{s}/project", y, "")
        x = g.op(f"{s}/add", "AddV2", s, [y, x]) if b % 3 else y
    g.op("__target__", "Target", "", [x])
    return g.report("mobilenet_like")


def big_flat(n: int = 20000) -> Report:
    """A synthetic 20k-op graph: 200 scopes of 100-op chains with cross links, a few broken edges."""
    g = _G()
    prev_scope_out = g.op("input", "Placeholder", "")
    for s in range(n // 100):
        scope = f"net/layer{s}"
        x = prev_scope_out
        for i in range(100):
            x = g.op(f"{scope}/op{i}", "MatMul" if i % 3 else "Add", scope, [x])
        prev_scope_out = x
    g.edges[5000].status = "unimplemented"
    g.edges[9000].status = "integer"
    g.op("__target__", "Target", "", [prev_scope_out])
    return g.report("synthetic_20k")


def _ms(f, repeat: int = 1) -> float:
    t = time.perf_counter()
    for _ in range(repeat):
        f()
    return (time.perf_counter() - t) * 1000 / repeat


def paint_case(view: GraphView, report: Report, expand: bool) -> dict:
    vp = view.viewport()

    def first():
        view.set_report(report)
        if expand:
            view.set_all_expanded(True)
        vp.repaint()

    first_ms = _ms(first)
    items = len(view.node_items)

    def pan():
        view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() + 40)
        vp.repaint()

    def zoom():
        view.zoom_by(1.05)
        vp.repaint()

    fit_pan, fit_zoom = _ms(pan, 10), _ms(zoom, 10)
    view.resetTransform()
    view.update_lod()
    view.centerOn(view.scene().itemsBoundingRect().center())
    near_pan = _ms(pan, 10)
    return {"first": first_ms, "pan": max(fit_pan, near_pan), "zoom": fit_zoom, "items": items}


def dot_layout(nodes, edges, budget_s: float = 60.0) -> tuple[float, int] | None:
    """Run Graphviz dot (if installed) and count its crossings between adjacent ranks."""
    if not shutil.which("dot"):
        return None
    idx = {n: i for i, n in enumerate(nodes)}
    src = "digraph G {\n" + "".join(f"n{idx[u]} -> n{idx[v]};\n" for u, v in edges) + "}\n"
    with tempfile.NamedTemporaryFile("w", suffix=".dot", delete=False) as fh:
        fh.write(src)
    t = time.perf_counter()
    try:
        out = subprocess.run(["dot", "-Tplain", fh.name], capture_output=True, text=True, timeout=budget_s)
    except subprocess.TimeoutExpired:
        return (budget_s * 1000, -1)
    ms = (time.perf_counter() - t) * 1000
    pos = {}
    for line in out.stdout.splitlines():
        p = line.split()
        if p and p[0] == "node":
            pos[p[1]] = (float(p[2]), -float(p[3]))
    ranks = sorted({round(y, 2) for _, y in pos.values()})
    rank = {n: ranks.index(round(y, 2)) for n, (_, y) in pos.items()}
    layers = [[] for _ in ranks]
    for n in sorted(pos, key=lambda n: pos[n][0]):
        layers[rank[n]].append(n)
    proper = [(f"n{idx[u]}", f"n{idx[v]}") for u, v in edges
              if rank.get(f"n{idx[v]}", -9) == rank.get(f"n{idx[u]}", -9) + 1]
    return ms, layout.crossings(layout.Ordering(layers, proper))


def layout_case(report: Report) -> dict:
    nodes = [o.id for o in report.graph.ops]
    edges = [(e.src, e.dst) for e in report.graph.edges if not e.back]
    t = time.perf_counter()
    o = layout.order(nodes, edges)
    layout.coordinates(o, {n: (170.0, 38.0) for n in nodes})
    ms = (time.perf_counter() - t) * 1000
    return {"n": len(nodes), "ms": ms, "cross": layout.crossings(o), "dot": dot_layout(nodes, edges)}


def main() -> int:
    app = QApplication.instance() or QApplication([])
    arg = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "out" / "resnet50_graph.json")
    resnet = Report.from_dict(json.load(open(arg))) if os.path.exists(arg) else resnet_like()
    view = GraphView()
    view.resize(1400, 800)
    view.show()
    app.processEvents()
    rows = [("ResNet default view (" + resnet.script.rsplit("/", 1)[-1] + f", {len(resnet.graph.ops)} ops)",
             paint_case(view, resnet, False), 1000, 50),
            ("ResNet fully expanded", paint_case(view, resnet, True), 1000, 50),
            ("synthetic 20,000 ops expanded", paint_case(view, big_flat(), True), 3000, 150)]
    print(f"{'case':48} {'items':>6} {'first paint ms':>15} {'target':>7} {'pan ms':>7} {'zoom ms':>8}"
          f" {'target':>7}")
    for name, r, t1, t2 in rows:
        print(f"{name:48} {r['items']:>6} {r['first']:>15.0f} {t1:>7} {r['pan']:>7.1f} {r['zoom']:>8.1f}"
              f" {t2:>7}")
    print()
    print(f"{'layout (flat, all ops)':48} {'nodes':>6} {'ours ms':>8} {'crossings':>10} {'dot ms':>8}"
          f" {'dot crossings':>14}")
    for name, rep in (("ResNet", resnet), ("ResNet-like synthetic", resnet_like()),
                      ("MobileNetV2-like synthetic", mobilenet_like())):
        r = layout_case(rep)
        d = r["dot"]
        dot_ms, dot_x = (f"{d[0]:.0f}", str(d[1])) if d else ("n/a", "dot not installed")
        print(f"{name:48} {r['n']:>6} {r['ms']:>8.0f} {r['cross']:>10} {dot_ms:>8} {dot_x:>14}")
    print("\ntargets: ResNet-sized flat layout < 50 ms for 3,000 nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
