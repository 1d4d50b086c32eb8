"""The window's own files are written as the commands write theirs (:mod:`tfviz.outputs`):
replaced only once complete, never onto a FIFO or a device, the Jacobian CSV signed, the SVG
readable by any XML reader whatever the op names hold. And a hostile saved analysis (an op
whose scope is its own name) is laid out and drawn instead of hanging the window."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import threading
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tests.gui.conftest import ROOT
from tfviz import __version__
from tfviz.outputs import SIGNATURE
from tfviz.report import GraphEdge, GraphOp, Report, TensorInfo

F32 = [TensorInfo("float32", [2])]


def _temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tfviz-tmp")]


def _disk_full(fd: int) -> None:
    """os.fsync once the whole file went to the temporary: the disk filled."""
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _report(names: list[str]) -> Report:
    """A chain of ops named ``names``, each fed by the one before."""
    r = Report(script="s.py", target="loss", ok=False, tensorflow="2.16")
    r.graph.ops = [GraphOp(n, n, "Relu", "", outputs=F32, on_path=True) for n in names]
    r.graph.edges = [GraphEdge(a, b, 0, 0, "float32", [2], status="passes") for a, b in zip(names, names[1:])]
    return r


# -- a hostile document terminates -------------------------------------------------------

#: Loads the document, builds the hierarchy and the window's scene (layout included) and
#: draws the SVG; prints where the op whose scope is its own name sits.
_LAYOUT = textwrap.dedent("""
    import os, sys
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from app.graph.export.image import write_image
    from tfviz.structure.hierarchy import Hierarchy
    from app.graph.scene import GraphScene
    from tfviz.analysisfile import load_analysis
    report = load_analysis(sys.argv[1])
    h = Hierarchy(report.graph)
    scene = GraphScene()
    scene.set_report(report)
    scene.build()
    write_image(scene, sys.argv[2])
    print(h.parent["a/b"], h.alias.get("a/b", "-"), len(scene.node_items))
""")


def test_an_op_whose_scope_is_its_own_name_is_laid_out_not_looped_on(tmp_path):
    doc = {
        "schema_version": 1,
        "script": "s.py",
        "target": "loss",
        "graph": {
            "ops": [
                {"id": "a/b", "name": "a/b", "type": "Identity", "scope": "a/b", "group": ""},
                {"id": "relu", "name": "relu", "type": "Relu", "scope": "", "group": ""},
            ],
            "edges": [
                {
                    "src": "a/b",
                    "dst": "relu",
                    "src_output": 0,
                    "dst_input": 0,
                    "dtype": "float32",
                    "shape": [2],
                }
            ],
            "functions": [],
        },
    }
    path, svg = tmp_path / "hostile.json", tmp_path / "hostile.svg"
    path.write_text(json.dumps(doc))
    # the timeouts only guard against the hang this test is about
    done = subprocess.run(
        [sys.executable, "-c", _LAYOUT, str(path), str(svg)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # its scope stood for nothing but itself: the op sits in the group above, as its own node
    assert done.stdout.split() == ["f:", "-", "2"]
    ET.parse(svg)
    cli_svg = tmp_path / "cli.svg"
    cli = subprocess.run(
        [sys.executable, "-m", "tfviz.cli", "export", str(path), "-o", str(cli_svg)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert cli.returncode in (0, 1) and "Traceback" not in cli.stderr, cli.stderr[-3000:]
    ET.parse(cli_svg)


# -- File > Save analysis… ---------------------------------------------------------------


def test_save_analysis_replaces_the_file_only_once_complete(tmp_path, monkeypatch):
    from app.saved import save
    from tfviz.analysisfile import load_analysis

    path = tmp_path / "bug.json"
    path.write_text("the analysis saved before")
    monkeypatch.setattr(os, "fsync", _disk_full)
    error = save(_report(["x", "y"]), str(path))
    assert error and "No space left on device" in error and str(path) in error
    assert path.read_text() == "the analysis saved before" and _temporaries(tmp_path) == []
    monkeypatch.undo()
    assert save(_report(["x", "y"]), str(path)) is None
    assert [o.id for o in load_analysis(path).graph.ops] == ["x", "y"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_save_analysis_refuses_a_fifo_instead_of_blocking_on_it(tmp_path):
    from app.saved import save

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    result: list[str | None] = []
    writer = threading.Thread(target=lambda: result.append(save(_report(["x"]), str(fifo))), daemon=True)
    writer.start()
    writer.join(30)
    if writer.is_alive():  # open() for writing blocks until a reader comes: be that reader
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        pytest.fail("saving onto a FIFO blocked")
    assert result[0] and "FIFO" in result[0]
    assert fifo.is_fifo() and _temporaries(tmp_path) == []


# -- the Jacobian panel's export -----------------------------------------------------------


def _jacobian(values: np.ndarray) -> SimpleNamespace:
    return SimpleNamespace(
        array=lambda: values,
        _array=None,
        out_range=None,
        in_range=None,
        of=SimpleNamespace(size=values.shape[0]),
    )


def test_jacobian_csv_is_signed_as_the_commands_is(tmp_path):
    from app.jacobian import saving
    from tfviz.outputs import written_by_tfviz

    values = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    path = saving.save(_jacobian(values), str(tmp_path / "j.csv"))  # type: ignore[arg-type]
    assert Path(path).read_text().splitlines()[0] == f"# {SIGNATURE} {__version__}"
    np.testing.assert_array_equal(np.loadtxt(path, delimiter=",", dtype=np.float32), values)
    assert written_by_tfviz(path)  # so ``tfviz jacobian -o`` may replace it without --force


@pytest.mark.parametrize("ext", [".npy", ".csv", ".png"])
def test_jacobian_export_leaves_the_old_file_when_the_write_fails(tmp_path, monkeypatch, ext):
    from app.jacobian import saving
    from tfviz.outputs import OutputError

    path = tmp_path / f"j{ext}"
    path.write_bytes(b"old")
    monkeypatch.setattr(os, "fsync", _disk_full)
    with pytest.raises(OutputError, match="No space left on device"):
        saving.save(_jacobian(np.eye(3, dtype=np.float32)), str(path))  # type: ignore[arg-type]
    assert path.read_bytes() == b"old" and _temporaries(tmp_path) == []


# -- File > Export image… ------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_image_export_refuses_a_fifo_and_leaves_it(qapp, tmp_path):
    from app.graph.export.image import ExportError, write_image
    from app.graph.scene import GraphScene

    scene = GraphScene()
    scene.set_report(_report(["x", "y"]))
    scene.build()
    fifo = tmp_path / "pipe.svg"
    os.mkfifo(fifo)
    with pytest.raises(ExportError, match="FIFO"):
        write_image(scene, str(fifo))  # was renamed over: the FIFO replaced by a file
    assert fifo.is_fifo() and _temporaries(tmp_path) == []


def test_the_windows_svg_export_escapes_names_xml_cannot_hold(qtbot, tmp_path):
    from app.graph.export.dialog import ExportDialog
    from app.window import MainWindow
    from app.worker_client import WorkerPool

    w = MainWindow(pool=WorkerPool(spare=False))
    qtbot.addWidget(w)
    w.show_report(_report(["in\x1b[31mput", "nul\x00here", "out"]))
    dlg = ExportDialog(w.graph.view, w)
    dlg.fmt.setCurrentIndex(dlg.fmt.findData("svg"))
    out = tmp_path / "window.svg"
    assert dlg.write(str(out)) is None, dlg.message
    root = ET.parse(out).getroot()  # Qt wrote the ESC and the NUL as they were: no reader opened it
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any("in\\x1b[31mput" in t for t in texts) and any("nul\\x00here" in t for t in texts)
