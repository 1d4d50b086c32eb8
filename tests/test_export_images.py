"""``tfviz export SCRIPT -o graph.{svg,png,pdf}`` without a display: the
image is drawn in a child process with Qt's offscreen platform, by the window's scene builder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import EXAMPLES, ROOT

SVD = str(EXAMPLES / "seed1_svd_dynamic_shape.py")
VERMILION = "#d55e00"  # STYLES["raises"]: the Svd edges (app/graph/palette.py)
LEGEND = ("passes", "raises", "stop_gradient", "no gradient", "harmless cut", "off-path")


def tfviz(*args: str) -> subprocess.CompletedProcess:
    """The command as a user on a machine without a display runs it."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    return subprocess.run(
        [sys.executable, "-m", "tfviz.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )


def _texts(path) -> list[str]:
    root = ET.parse(path).getroot()
    return ["".join(t.itertext()).strip() for t in root.iter("{http://www.w3.org/2000/svg}text")]


@pytest.fixture(scope="module")
def seed1_svg(tmp_path_factory):
    out = tmp_path_factory.mktemp("img") / "graph.svg"
    return tfviz("export", SVD, "-o", str(out)), out


def test_svd_example_to_svg_without_a_display(seed1_svg):
    r, out = seed1_svg
    assert r.returncode == 1, r.stderr[-2000:]  # problems found, as check
    assert "graph.svg: svg" in r.stdout and "Traceback" not in r.stderr
    texts = _texts(out)  # valid XML
    svg = out.read_text()
    assert VERMILION in svg.lower()
    assert any(
        t.startswith("seed1_svd_dynamic_shape.py") and "TensorFlow" in t and "broken" in t for t in texts
    )
    for word in LEGEND:
        assert word in texts
    assert any("Svd" in t for t in texts)  # op types are text, searchable


def test_svd_svg_is_what_browsers_draw(seed1_svg):
    """What a browser needs to show it as Qt drew it: the size in pixels with a matching
    viewBox, the Svd edges stroked in the legend's vermilion dash-dot,
    and font families that end in a generic family."""
    _, out = seed1_svg
    root = ET.parse(out).getroot()
    w, h = int(root.get("width")), int(root.get("height"))
    assert root.get("viewBox") == f"0 0 {w} {h}"
    svg = "{http://www.w3.org/2000/svg}"
    lines = [
        g
        for g in root.iter(f"{svg}g")
        if (g.get("stroke") or "").lower() == VERMILION
        and (g.find(f"{svg}path") is not None or g.find(f"{svg}polyline") is not None)
    ]
    sample = [g for g in lines if g.find(f"{svg}polyline") is not None]  # the legend's line
    assert len(sample) == 1 and sample[0].get("stroke-dasharray")
    edges = [
        g
        for g in lines
        if g.find(f"{svg}path") is not None and g.get("stroke-dasharray") == sample[0].get("stroke-dasharray")
    ]
    assert edges, "no edge drawn in the legend's vermilion dash-dot (the Svd edges)"
    families = {el.get("font-family") for el in root.iter() if el.get("font-family")}
    assert families and all(f.endswith("sans-serif") for f in families), families


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "seed1.json"
    r = tfviz("export", SVD, "-o", str(path))
    assert r.returncode == 1, r.stderr[-2000:]
    return path


def test_expand_changes_what_is_drawn(saved, tmp_path):
    boxes, texts = {}, {}
    for mode in ("none", "problems", "default", "all"):
        out = tmp_path / f"{mode}.svg"
        r = tfviz("export", str(saved), "-o", str(out), "--expand", mode)
        assert r.returncode == 1, r.stderr
        boxes[mode] = int(re.search(r"(\d+) boxes", r.stdout).group(1))
        texts[mode] = len(_texts(out))
    assert boxes["none"] < boxes["problems"] <= boxes["all"]
    assert boxes["none"] < boxes["default"] <= boxes["all"]
    assert texts["none"] < texts["default"] < texts["all"]  # two lines of text per node


def test_png_and_pdf_and_their_refusals(saved, tmp_path):
    png, pdf = tmp_path / "g.png", tmp_path / "g.pdf"
    r = tfviz("export", str(saved), "-o", str(png), "--expand", "none", "--scale", "1.5")
    assert r.returncode == 1 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", r.stderr
    assert " px, " in r.stdout and "MP" in r.stdout
    r = tfviz("export", str(saved), "-o", str(pdf), "--expand", "none")
    data = pdf.read_bytes()
    assert r.returncode == 1 and data.startswith(b"%PDF")
    assert len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", data)) == 1
    # rewriting its own images is allowed; someone else's file is not
    for again in (png, pdf):
        r = tfviz("export", str(saved), "-o", str(again), "--expand", "none")
        assert r.returncode == 1, r.stderr
    mine = tmp_path / "mine.pdf"
    mine.write_bytes(b"%PDF-1.4 someone else's\n")
    r = tfviz("export", str(saved), "-o", str(mine))
    assert r.returncode == 2 and "not a file tfviz wrote" in r.stderr
    assert mine.read_bytes() == b"%PDF-1.4 someone else's\n"
    # past the pixel cap: one clear line, exit 2, no file
    big = tmp_path / "big.png"
    r = tfviz("export", str(saved), "-o", str(big), "--expand", "all", "--scale", "8")
    assert r.returncode == 2 and not big.exists()
    assert "MP limit" in r.stderr and "use scale" in r.stderr and "SVG or PDF" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = tfviz("export", str(saved), "-o", str(tmp_path / "missing" / "g.svg"))
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("scale", ["0", "-2", "abc", "nan", "inf"])
def test_bad_scale_is_refused_before_anything_runs(scale, tmp_path):
    out = tmp_path / "g.png"
    r = tfviz("export", SVD, "-o", str(out), "--scale", scale)
    assert r.returncode == 2 and "--scale: must be a positive number" in r.stderr
    assert not out.exists() and "Traceback" not in r.stderr


def test_bad_expand_and_options_a_saved_analysis_cannot_take(tmp_path):
    r = tfviz("export", SVD, "-o", str(tmp_path / "g.svg"), "--expand", "some")
    assert r.returncode == 2 and "invalid choice: 'some'" in r.stderr
    doc = tmp_path / "a.json"
    doc.write_text("{}")
    r = tfviz("export", str(doc), "-o", str(tmp_path / "g.svg"), "--target", "loss")
    assert r.returncode == 2 and "saved analysis is shown as it was saved" in r.stderr
    r = tfviz("export", str(doc), "-o", str(tmp_path / "g.svg"))
    assert r.returncode == 2 and "not a tfviz analysis" in r.stderr and not (tmp_path / "g.svg").exists()


def test_sigterm_to_export_takes_its_renderer_and_leaves_nothing(tmp_path):
    """tfviz killed while its image renderer draws: the renderer goes too (it used to
    write its file 40 s later), and no scratch folder or partial image is left."""
    import json
    import signal
    import time

    from tests.bigdoc import big_document

    doc = tmp_path / "big.json"
    doc.write_text(json.dumps(big_document(20_000)))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "big.svg"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfviz.cli", "export", str(doc), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, TMPDIR=str(scratch)),
    )
    renderer = None
    try:
        for _ in range(1200):  # until the renderer runs
            kids = subprocess.run(
                ["ps", "-o", "pid=,args=", "--ppid", str(proc.pid)], capture_output=True, text=True
            ).stdout.splitlines()
            hits = [int(k.split()[0]) for k in kids if "app.graph.export.headless" in k]
            if hits:
                renderer = hits[0]
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert renderer is not None
        time.sleep(1.0)  # drawing by now
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    # SIGTERM, said as such, and 128 + 15 as a shell reports it
    assert (
        proc.returncode == 143
        and "interrupted (SIGTERM)" in err.decode()
        and "was not written" in err.decode()
    )
    time.sleep(0.5)
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(renderer)], capture_output=True, text=True).stdout
    assert not state.strip() or state.strip().startswith("Z")  # gone (or reaped soon)
    assert list(scratch.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.json", "tmp"]  # no image, no partial file


def _hostile_names_doc() -> dict:
    """A valid analysis whose names hold what XML cannot: controls, written in JSON as
    escapes, and a lone surrogate."""
    from tests.test_export import _doc

    doc = _doc()
    doc["graph"]["ops"][0]["name"] = "esc\x1b[31m nul\x00 \ud800 form\x0c"
    doc["graph"]["ops"][1]["type"] = "Ty\x08pe"
    return doc


@pytest.mark.parametrize("which", ["seed1", "hostile names", "unknown fields"])
def test_a_saved_file_drawn_while_it_is_checked_is_drawn_as_after_the_check(which, saved, tmp_path):
    """``tfviz export saved.json -o x.svg`` draws the file as it reads it, unchecked, while
    tfviz checks it: the image is the slow way's, the checked report drawn from tfviz's
    own scratch file. A valid file the renderer cannot rebuild unchecked (fields this tfviz
    ignores) is drawn the slow way."""
    import json

    from tfviz.analysisfile import load_analysis
    from tfviz.commands.export import draw

    path = tmp_path / "in.json"
    if which == "seed1":
        path.write_bytes(saved.read_bytes())
    else:
        doc = _hostile_names_doc()
        if which == "unknown fields":
            doc["graph"]["ops"][0]["written_by_a_later_tfviz"] = 1
        path.write_text(json.dumps(doc))
    fast, slow = tmp_path / "fast.svg", tmp_path / "slow.svg"
    r = tfviz("export", str(path), "-o", str(fast), "--expand", "all")
    report = load_analysis(path)
    assert r.returncode == (0 if report.ok else 1), r.stderr
    assert "Traceback" not in r.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    old = os.environ.copy()
    try:
        os.environ.clear()
        os.environ.update(env)
        ok, _ = draw(report, str(slow), "svg", "all")
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert ok and fast.read_bytes() == slow.read_bytes()
    texts = " ".join(_texts(fast))
    if which != "seed1":
        # the box elides the middle of the long name
        assert "esc\\x1b[31" in texts and "form\\x0c" in texts and "Ty\\x08pe" in texts


@pytest.mark.parametrize(
    "name", ["truncated", "deep inside", "unknown group", "newer schema", "deeply nested"]
)
def test_a_saved_file_that_fails_its_check_is_never_drawn(name, tmp_path):
    """The renderer may finish before the check fails: the image is still not kept, and the
    message is the check's."""
    from tests.test_export import HOSTILE

    data, words = HOSTILE[name]
    path, out = tmp_path / "bad.json", tmp_path / "bad.svg"
    path.write_bytes(data)
    r = tfviz("export", str(path), "-o", str(out))
    assert r.returncode == 2 and words in r.stderr and str(path) in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not out.exists() and os.listdir(tmp_path) == ["bad.json"]
