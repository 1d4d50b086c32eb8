"""Benchmark: exporting large analyses through the installed ``tfviz export``.

Two documents, made by :mod:`tests.bigdoc` and saved to a temporary folder:

* a saved analysis of about 100 MB (290,000 variables, every 10th drawn: 58,001 ops);
* a model-shaped graph of 100,001 ops (1,000 layers of 100 ops in a chain).

Each is exported to DOT, GraphML and SVG (the 100k-op graph also with ``--expand all``: a
box per op), end to end as a user runs it, best of ``--repeat``. Target: at most 10 s each
from the saved file to the image or data. Baseline: the figures that were measured before
this work (the issue's: DOT 30 s and SVG 48 s for 100k ops; 106 MB: DOT 20 s, SVG 139 s).

Then the two stages that ``tfviz export`` to an image no longer repeats, each beside the
straightforward way, measured here in the same run on the 100k-op graph:

* the scratch file for the renderer: every string walked for characters XML cannot hold
  (``xml_safe_tree`` then ``json.dumps``) against ``xml_safe_json``, which walks only when
  the JSON text shows such a character;
* the renderer's read: checked field by field (``load_analysis``) against rebuilt from a
  file tfviz wrote from a checked report (``headless.read(..., checked=True)``).

    .venv/bin/python tests/bench/bench_export_large.py [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bigdoc import big_json, deep_document  # noqa: E402

TARGET_S = 10.0
TFVIZ = str(Path(sys.executable).with_name("tfviz"))
#: (document, format, --expand) -> seconds before this work, where it was measured
BASELINE = {
    ("100k ops", "dot", "default"): 30.0,
    ("100k ops", "svg", "all"): 48.0,
    ("106 MB", "dot", "default"): 20.0,
    ("106 MB", "svg", "default"): 139.0,
}


def export(src: str, out: str, expand: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(
        [TFVIZ, "export", src, "-o", out, "--force", "--expand", expand], capture_output=True, text=True
    )
    took = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        raise SystemExit(f"tfviz export failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    return took


def stage_twins(src: str, folder: str) -> None:
    from tfviz.analysisfile import analysis_document, load_analysis
    from tfviz.outputs import xml_safe_json, xml_safe_tree
    from tfviz.report import collector_paused

    report = load_analysis(src)
    with collector_paused():
        doc = analysis_document(report)
        t0 = time.perf_counter()
        walked = json.dumps(xml_safe_tree(doc), allow_nan=False)
        t1 = time.perf_counter()
        text = xml_safe_json(doc)
        t2 = time.perf_counter()
    print(f"  scratch file: walk every string {t1 - t0:.2f} s; xml_safe_json {t2 - t1:.2f} s")
    assert json.loads(walked) == json.loads(text)
    scratch = os.path.join(folder, "scratch.json")
    Path(scratch).write_text(text, encoding="utf-8")
    del doc, walked, text
    code = (
        "import sys, time\n"
        "from tfviz_app.graph.export.headless import read\n"
        "t = time.perf_counter(); read(sys.argv[1], sys.argv[2] == '1')\n"
        "print(time.perf_counter() - t)\n"
    )
    took = [
        float(subprocess.run([sys.executable, "-c", code, scratch, c], capture_output=True, text=True).stdout)
        for c in ("0", "1")
    ]
    print(f"  renderer's read: checked again {took[0]:.2f} s; rebuilt from tfviz's own file {took[1]:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        docs = {
            "106 MB": os.path.join(tmp, "saved.json"),
            "100k ops": os.path.join(tmp, "deep.json"),
        }
        Path(docs["106 MB"]).write_bytes(big_json(290_000, graph_every=10))
        Path(docs["100k ops"]).write_text(json.dumps(deep_document(1000, 100)))
        for name, path in docs.items():
            print(f"{name}: {os.path.getsize(path) / 1e6:.0f} MB")
        print(f"\ntarget: each export at most {TARGET_S:.0f} s (best of {args.repeat})")
        cases = [(name, fmt, "default") for name in docs for fmt in ("dot", "graphml", "svg")] + [
            ("100k ops", "svg", "all")
        ]
        for name, fmt, expand in cases:
            out = os.path.join(tmp, f"out.{fmt}")
            best = min(export(docs[name], out, expand) for _ in range(args.repeat))
            base = BASELINE.get((name, fmt, expand))
            was = f"  (before: {base:.0f} s)" if base else ""
            met = "met" if best <= TARGET_S else "NOT met"
            print(f"{name:9} {fmt:8} --expand {expand:8} {best:6.1f} s  {met}{was}")
        print("\nstages not repeated any more (100k ops):")
        stage_twins(docs["100k ops"], tmp)


if __name__ == "__main__":
    main()
