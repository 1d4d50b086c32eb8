"""Render the screenshots in docs/images (not a test; run it by hand after GUI changes).

Usage: python tests/gui/render_docs.py [OUTDIR]   (default: docs/images)
Uses the real window and worker, so each picture shows what a user sees at 1400x900.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="tfviz-render-")  # no saved layout, no recents
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
EXAMPLES = ROOT / "resources" / "examples"

from PySide6.QtCore import QElapsedTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tests.gui.conftest import drawn  # noqa: E402


def settle(app, ms: int = 300) -> None:
    t = QElapsedTimer()
    t.start()
    while t.elapsed() < ms:
        app.processEvents()


def analyze(app, w, script: Path) -> None:
    w.open_script(str(script))
    t = QElapsedTimer()
    t.start()
    while w.analysis.busy() and t.elapsed() < 180_000:
        app.processEvents()
    if w.analysis.report is None:
        raise SystemExit(f"{script.name}: no report: {w.analysis.last_error}")
    settle(app)


def render_jacobian(app, w, out: Path) -> None:
    """The Jacobian panel on seed 3: J(y, W) with a hovered element, then the chain-rule split."""
    from PySide6.QtCore import QPoint
    from PySide6.QtTest import QTest

    analyze(app, w, EXAMPLES / "seed3_chain_rule_split.py")
    c = w.jacobian

    def compute(*req) -> None:
        c.open(*req)
        t = QElapsedTimer()
        t.start()
        while (c.current is not None or c.pending is not None) and t.elapsed() < 120_000:
            app.processEvents()
        settle(app)

    compute("y", "W")
    w.graph.view.select_op("y")
    heat = c.panel.single
    p = heat.element_center(1, 7).toPoint()
    QTest.mouseMove(heat.viewport(), p + QPoint(1, 0))
    QTest.mouseMove(heat.viewport(), p)
    settle(app)
    w.grab().save(str(out / "window_jacobian.png"))
    compute("y", "W", "h")
    w.grab().save(str(out / "window_jacobian_split.png"))
    w.docks["Problems"].raise_()


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = Path(args[0]) if args else ROOT / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    from app.window import MainWindow

    w = MainWindow()
    w.resize(1400, 900)
    w.show()
    settle(app, 500)
    if "--jacobian" in sys.argv:  # only the Jacobian panel's images
        render_jacobian(app, w, out)
        w.close()
        return 0
    w.grab().save(str(out / "window_start.png"))

    analyze(app, w, EXAMPLES / "seed1_svd_dynamic_shape.py")
    rows = [w.problems.topLevelItem(i) for i in range(w.problems.topLevelItemCount())]
    svd = next(r for r in rows if "Svd" in r.text(1))
    w.problems.setCurrentItem(svd)
    w.links.show_problem(svd.data(0, 0x0100))
    settle(app)
    w.grab().save(str(out / "window_seed1.png"))

    # The image a user attaches to a bug report: File > Export image…, the visible area.
    from app.graph.export.dialog import visible_rect
    from app.graph.export.image import write_image

    view = w.graph.view
    write_image(view.scene(), str(out / "export_seed1.png"), "png", scale=1.0, source=visible_rect(view))

    # The headline case, as it opens: layers, the stray stop_gradient and the starved
    # attention weights in view, no click.
    analyze(app, w, EXAMPLES / "transformer_stop_gradient.py")
    w.grab().save(str(out / "window_transformer.png"))

    analyze(app, w, EXAMPLES / "seed2_frozen_copy.py")
    frozen = next(v for v in w.analysis.report.variables if v.kind == "frozen_copy")
    w.variables.select_name(frozen.name)
    settle(app)
    w.grab().save(str(out / "window_seed2.png"))

    analyze(app, w, EXAMPLES / "seed3_chain_rule.py")
    w.variables.select_name(w.analysis.report.variables[0].name)
    w.graph.magnitude.setChecked(True)  # the gradient-magnitude overlay
    drawn(w.graph.view)
    settle(app)
    w.grab().save(str(out / "window_seed3.png"))

    w.graph.magnitude.setChecked(False)
    drawn(w.graph.view)
    analyze(app, w, EXAMPLES / "kind_zero_dead_relu.py")
    w.graph.view.fit()
    relu = w.problems.topLevelItem(0)
    w.problems.setCurrentItem(relu)
    w.links.show_problem(relu.data(0, 0x0100))
    settle(app)
    w.grab().save(str(out / "window_zero.png"))

    # A sigmoid stack: the Gradient flow chart draws the magnitude rule the status bar states.
    analyze(app, w, EXAMPLES / "kind_vanishing.py")
    w.docks["Gradient flow"].raise_()
    settle(app)
    w.grab().save(str(out / "window_vanishing.png"))
    w.docks["Problems"].raise_()

    render_jacobian(app, w, out)

    # Program mode: the analysis bar with its arguments and step, the Log with the program's output.
    w.log.clear()
    w.open_script(str(EXAMPLES / "program_seed2_fit.py"))
    t = QElapsedTimer()
    t.start()
    while w.analysis.busy() and t.elapsed() < 180_000:
        app.processEvents()
    w.docks["Log"].raise_()
    settle(app)
    w.grab().save(str(out / "window_program.png"))
    w.docks["Problems"].raise_()

    w.open_script(str(ROOT / "tests" / "gui" / "scripts" / "segfault.py"))
    t.restart()
    while w.analysis.busy() and t.elapsed() < 180_000:
        app.processEvents()
    settle(app)
    w.grab().save(str(out / "window_crash.png"))

    graph = ROOT / "out" / "resnet50_graph.json"
    if graph.exists():  # the full analysis of ResNet50 takes a while; reuse `tfviz check --graph`
        from tfviz.report import Report

        w.open_script(str(EXAMPLES / "healthy_resnet50.py"))
        w.cancel(quiet=True)
        w.analysis._result(Report.from_dict(json.loads(graph.read_text())).to_dict())
    else:
        analyze(app, w, EXAMPLES / "healthy_resnet50.py")
    settle(app, 500)
    w.grab().save(str(out / "window_resnet50.png"))
    w.close()
    print("wrote", ", ".join(p.name for p in sorted(out.glob("*.png"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
