"""Export benchmark (not a test): ResNet50's gradient graph, fully expanded, exported to PNG
at scale 1 and to SVG, beside the time to lay it out and paint it on screen (issue 10).

Usage: python tests/bench/bench_export.py [RESNET50_ANALYSIS.json]
Without an argument the analysis is made once with ``tfviz export
resources/examples/healthy_resnet50.py -o out/resnet50_analysis.json`` and cached there.

Target: each export takes at most 2x the on-screen layout and paint. The screen figure is
a GraphView in an offscreen window: ``set_report`` + expand all (layout and scene build),
then fit and ``viewport().grab()`` (a real paint of everything visible). Exports build the
same scene through the same builder, then draw every item in full detail.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from PySide6.QtGui import QColor, QImage, QPainter  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.graph.export import ExportError, max_scale, paint, plan, size_text, write_image  # noqa: E402
from app.graph.scene import GraphScene  # noqa: E402
from app.graph.view import GraphView  # noqa: E402
from tfviz.analysisfile import load_analysis  # noqa: E402
from tfviz.report import Report  # noqa: E402


def resnet_analysis() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    out = ROOT / "out" / "resnet50_analysis.json"
    if not out.exists():
        out.parent.mkdir(exist_ok=True)
        print(f"analysing healthy_resnet50.py once (cached in {out.relative_to(ROOT)}) …", flush=True)
        subprocess.run([sys.executable, "-m", "tfviz.cli", "export", "resources/examples/healthy_resnet50.py",
                        "-o", str(out)], cwd=ROOT, capture_output=True, timeout=1200)
    return out


def _s(fn) -> tuple[float, object]:
    t = time.perf_counter()
    got = fn()
    return time.perf_counter() - t, got


def on_screen(report: Report) -> tuple[float, float, int]:
    """(layout and scene build, fitted paint) in seconds, and the number of boxes."""
    view = GraphView()
    view.resize(1400, 900)
    view.show()
    QApplication.processEvents()

    def build():
        view.set_report(report)
        view.set_all_expanded(True)  # expands, lays out, builds, fits

    t_build, _ = _s(build)
    t_paint, _ = _s(lambda: view.viewport().grab())
    n = len(view.node_items)
    view.close()
    return t_build, t_paint, n


def exported(report: Report, fmt: str, folder: str, scale: float) -> tuple[float, float, str]:
    """(scene build, drawing and writing) in seconds, and what was written."""
    def build():
        sc = GraphScene()
        sc.set_report(report)
        sc.expanded = sc.expansion("all")
        sc.build()
        return sc

    t_build, sc = _s(build)
    path = os.path.join(folder, f"r50.{fmt}")
    t_write, page = _s(lambda: write_image(sc, path, fmt, scale=scale))
    what = size_text(*page.pixels(scale)) if fmt == "png" else f"{os.path.getsize(path) / 2**20:.1f} MB"
    return t_build, t_write, what


def main() -> int:
    app = QApplication.instance() or QApplication([])  # noqa: F841 - Qt needs it alive
    report = load_analysis(resnet_analysis())
    print(f"ResNet50: {len(report.graph.ops)} ops, {len(report.graph.edges)} edges, fully expanded")
    build, t_paint, n = on_screen(report)
    screen = build + t_paint
    print(f"{'on screen':<22} layout+build {build:6.2f} s   paint (fit, grab) {t_paint:6.2f} s"
          f"   total {screen:6.2f} s   ({n} boxes)")
    sc = GraphScene()
    sc.set_report(report)
    sc.expanded = sc.expansion("all")
    sc.build()
    page = plan(sc)
    scale = 1.0
    if page.pixels(1.0)[0] * page.pixels(1.0)[1] > 64_000_000:
        scale = max_scale(page)
        print(f"(PNG at scale 1 would be {size_text(*page.pixels(1.0))}, over the cap: PNG at {scale:g})")
    def draw_only():
        w, h = page.pixels(scale)
        img = QImage(w, h, QImage.Format_RGB32)
        img.fill(QColor("white"))
        p = QPainter(img)
        p.scale(scale, scale)
        paint(sc, page, p)
        p.end()
        return img

    t_draw, img = _s(draw_only)
    with tempfile.TemporaryDirectory() as tmp:
        t_enc, _ = _s(lambda: img.save(os.path.join(tmp, "x.png"), "PNG"))
    print(f"{'  png, of which':<22} drawing {t_draw:6.2f} s   PNG encoding (zlib) {t_enc:6.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, s in (("png", scale), ("svg", 1.0), ("pdf", 1.0)):
            try:
                b, w, what = exported(report, fmt, tmp, s)
            except ExportError as exc:
                print(f"export {fmt}: {exc}")
                continue
            total = b + w
            verdict = "ok" if total <= 2 * screen else "OVER"
            print(f"{'export ' + fmt + (f' @{s:g}' if fmt == 'png' else ''):<22} layout+build {b:6.2f} s"
                  f"   draw+write {w:6.2f} s   total {total:6.2f} s   = {total / screen:4.2f}x screen"
                  f" (target ≤ 2x: {verdict})   {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
