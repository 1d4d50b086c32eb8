"""The conv example in the Jacobian panel: a structured slice (one batch element), the
max-|J| pooled heatmap shows the sparse structure, the window keeps answering while the
result is decoded, pooled and exported, and the exported PNG is a figure with axes.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import EXAMPLES, run_analysis
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage

from app.jacobian import saving
from app.jacobian.heatmap import shorter_titles

CONV = EXAMPLES / "jacobian_conv.py"
OF, WRT = "convnet/conv/Relu", "convnet/conv/kernel"
WAIT_MS = 180_000


class Threads:
    """Wraps functions so each call notes whether it ran on the GUI thread: the window keeps
    answering exactly when its heavy work (decoding, pooling, writing) runs elsewhere."""

    def __init__(self, monkeypatch) -> None:
        self.monkeypatch = monkeypatch
        self.calls: dict[str, list[bool]] = {}

    def watch(self, owner, name: str) -> None:
        real = getattr(owner, name)
        seen = self.calls.setdefault(name, [])

        def wrapped(*args, **kwargs):
            seen.append(threading.current_thread() is threading.main_thread())
            return real(*args, **kwargs)

        self.monkeypatch.setattr(owner, name, wrapped)

    def off_gui(self, name: str) -> bool:
        """Called at least once, and never on the GUI thread."""
        return bool(self.calls.get(name)) and not any(self.calls[name])


@pytest.fixture
def conv(qtbot, window):
    if window.analysis.script != str(CONV) or window.analysis.report is None:
        run_analysis(qtbot, window, CONV)
    assert window.analysis.report is not None and window.jacobian.alive()
    window.jacobian.budget_mb = None
    return window


def image_region(heat) -> QImage:
    """The grabbed widget's pixels where the matrix is drawn."""
    rect = heat.mapFromScene(heat.image.mapRectToScene(QRectF(heat.image.boundingRect()))).boundingRect()
    return heat.grab().toImage().copy(rect.adjusted(2, 2, -2, -2))


def pixels(img: QImage) -> np.ndarray:
    """(height, width, 3) ints."""
    img = img.convertToFormat(QImage.Format.Format_RGB888)
    w, h, bpl = img.width(), img.height(), img.bytesPerLine()
    a = np.frombuffer(img.constBits(), np.uint8, count=h * bpl).reshape(h, bpl)[:, : 3 * w]
    return a.reshape(h, w, 3).astype(int)


def non_background(img: QImage) -> float:
    """The fraction of pixels that are not the white of zero."""
    return float(np.mean(np.abs(pixels(img) - 247).max(axis=2) > 12))


def test_one_batch_element_shows_structure_decoded_off_the_gui_thread(qtbot, conv, tmp_path, monkeypatch):
    from app import worker_client
    from app.jacobian import heatmap
    from app.worker_client import Worker

    c = conv.jacobian
    heat = c.panel.single
    joined: list[int] = []  # its 20 MB of base64 come in pieces, joined and decoded off the GUI thread
    decode = Worker._decode_in_background
    monkeypatch.setattr(
        Worker,
        "_decode_in_background",
        lambda self, msg, pieces: (joined.append(len(pieces)), decode(self, msg, pieces))[1],
    )
    threads = Threads(monkeypatch)
    threads.watch(worker_client, "decode_jacobian")
    threads.watch(heatmap, "pool_max_abs")
    c.open(OF, WRT, of_index=[0, None, None, None])
    qtbot.waitUntil(lambda: c.current is None and not heat.busy, timeout=WAIT_MS)
    j = c.panel.shown
    assert j is not None and j.out_index == [0, None, None, None], c.panel.message.text()
    assert saving.values_of(j).shape == (24, 24, 16, 5, 5, 1, 16) and heat.matrix.shape == (9216, 400)
    assert threads.off_gui("decode_jacobian"), threads.calls
    assert threads.off_gui("pool_max_abs"), threads.calls
    assert joined and joined[0] >= 4, joined
    # one control per dimension, labelled with its size, showing the slice computed
    assert [b.value() for b in c.panel.of_dims.boxes] == [0, -1, -1, -1]
    assert [b.specialValueText() for b in c.panel.wrt_dims.boxes] == ["all"] * 4
    assert c.panel.slice_row.isVisibleTo(c.panel) and "9,216 × 400" in c.panel.slice_size.text()
    # more rows than pixels: pooled by max |J|, and the panel says so
    by, bx = heat.blocks
    assert by > 1 and heat.shown.shape[0] == -(-9216 // by)
    assert "max |J|" in heat.zoom.text and f"{by} × {bx}" in heat.zoom.text
    # what the pooling keeps: every nonzero element colours its pixel (a 16-channel stripe pattern)
    assert np.count_nonzero(heat.shown) >= 0.3 * heat.shown.size
    qtbot.wait(50)
    heat.grab().save(str(tmp_path / "panel_heatmap.png"))
    shown = non_background(image_region(heat))
    heat.set_matrix(np.zeros((9216, 400), np.float32))  # the same heatmap, blank
    qtbot.waitUntil(lambda: not heat.busy, timeout=10_000)
    qtbot.wait(50)
    blank = non_background(image_region(heat))
    assert blank < 0.01 and shown > 0.3, (shown, blank)
    c.panel._fill(heat, j)  # back to the result for the next test
    qtbot.waitUntil(lambda: not heat.busy, timeout=10_000)


def test_picking_a_channel_in_the_controls_computes_that_slice(qtbot, conv):
    c = conv.jacobian
    c.open(OF, WRT, of_index=[0, None, None, None])
    qtbot.waitUntil(lambda: c.current is None, timeout=WAIT_MS)
    c.panel.of_dims.boxes[3].setValue(3)
    c.panel.wrt_dims.boxes[3].setValue(3)
    assert c.panel.slices() == ([0, None, None, 3], [None, None, None, 3])
    assert "576 × 25" in c.panel.slice_size.text()
    c.panel.compute_btn.click()
    qtbot.waitUntil(lambda: c.current is None, timeout=WAIT_MS)
    j = c.panel.shown
    assert saving.values_of(j).shape == (24, 24, 5, 5, 1) and c.panel.single.matrix.shape == (576, 25)
    left = c.panel.single.plot.getAxis("left")
    assert left.toolTip().startswith(f"{OF}[0,:,:,3]")
    assert left.labelText in shorter_titles(left.toolTip()) or "…" in left.labelText


def test_a_first_look_from_a_menu_opens_on_one_example_and_one_channel(qtbot, conv):
    """Unsliced, a conv layer's Jacobian is a solid block: a menu's request opens it on
    example 0 and channel 0, and a line says so and how to choose others."""
    c = conv.jacobian
    assert c._shape(OF) == [8, 24, 24, 16] and c._shape(WRT) == [5, 5, 1, 16]
    c.open_first(OF, WRT)
    qtbot.waitUntil(lambda: c.current is None and not c.panel.single.busy, timeout=WAIT_MS)
    j = c.panel.shown
    assert j.out_index == [0, None, None, 0] and j.in_index == [None, None, None, 0]
    assert saving.values_of(j).shape == (24, 24, 5, 5, 1)
    text = c.panel.message.text()
    assert "Showing example 0 of 8, channel 0 of 16" in text and "index boxes" in text, text
    assert [b.value() for b in c.panel.of_dims.boxes] == [0, -1, -1, 0]
    # the tensors by the names the graph gives them; the worker is asked by its own
    assert c.panel.of.currentText() == "conv › Relu" and c.panel.of.toolTip() == OF
    assert c.panel.wrt.currentText() == 'model.get_layer("conv").kernel'
    assert c.panel.request() == (OF, WRT, "")
    assert "J(conv › Relu, model.get_layer(&quot;conv&quot;).kernel)" in text
    # the rows' title runs up the plot's side: it fits there (it was cut), whole in its tooltip
    from PySide6.QtGui import QFontMetrics

    heat = c.panel.single
    axis = heat.plot.getAxis("left")
    title = axis.labelText
    assert QFontMetrics(axis.label.font()).horizontalAdvance(title) <= heat.plot.getViewBox().height()
    assert axis.toolTip().startswith(f"{OF}[0,:,:,0]")
    if title in shorter_titles(axis.toolTip()):  # the panel's height decides how short
        assert "Relu[0,:,:,0]" in title
    else:  # not even the tensor and its slice fit: cut in the middle
        assert "…" in title and title.startswith("Re")
    c.open(OF, WRT)  # asked for whole (the Compute button with every box on all): whole
    qtbot.waitUntil(lambda: c.current is None and not c.panel.single.busy, timeout=WAIT_MS)
    assert c.panel.shown.out_index is None and "Showing" not in c.panel.message.text()


def test_too_big_offers_one_batch_element(qtbot, conv):
    c = conv.jacobian
    c.budget_mb = 20  # the whole batch takes 112.5 MiB, one element 14.1
    c.open(OF, WRT)
    qtbot.waitUntil(lambda: c.current is None, timeout=WAIT_MS)
    text = c.panel.message.text()
    assert "Too big." in text and c.panel.offers[0]["of_index"] == [0, None, None, None], text
    assert [b.maximum() + 1 for b in c.panel.of_dims.boxes] == [8, 24, 24, 16]
    c.panel._link("offer:0")
    qtbot.waitUntil(lambda: c.current is None and not c.panel.single.busy, timeout=WAIT_MS)
    assert c.panel.shown.out_index == [0, None, None, None]
    c.budget_mb = None


def test_export_off_the_gui_thread_and_png_figure(qtbot, conv, tmp_path, monkeypatch):
    c = conv.jacobian
    c.open(OF, WRT, of_index=[0, None, None, None])
    qtbot.waitUntil(lambda: c.current is None and not c.panel.single.busy, timeout=WAIT_MS)
    j = c.panel.export_target()
    answers: list = []
    c.panel.exported.connect(lambda *args: answers.append(list(args)))

    threads = Threads(monkeypatch)
    threads.watch(saving, "save")
    for ext in (".csv", ".png", ".npy"):
        path = str(tmp_path / f"j{ext}")
        answers.clear()
        c.panel.export_to(j, path)
        qtbot.waitUntil(lambda: bool(answers), timeout=WAIT_MS)
        assert answers == [[path, ""]], ext
    assert threads.calls["save"] == [False] * 3, threads.calls
    np.testing.assert_array_equal(np.load(tmp_path / "j.npy"), saving.values_of(j))
    img = QImage(str(tmp_path / "j.png"))
    x, y, w, h = (int(v) for v in img.text("tfviz:matrix").split(","))
    # the figure is larger than the matrix: room for the axes, the names and the colour bar
    assert img.width() > x + w + 60 and img.height() > y + h + 30 and x > 40 and y > 30
    a = pixels(img)
    dark = a.sum(axis=2) < 250
    assert dark[y : y + h, : x - 6].sum() > 200  # row index labels and the output's name
    assert dark[y + h + 6 :, x : x + w].sum() > 200  # column index labels and the input's name
    assert dark[: y - 4, :].sum() > 200  # the title
    bar = a[y : y + h, x + w + 10 :]
    red = (bar[..., 0] > 150) & (bar[..., 2] < 90)
    blue = (bar[..., 2] > 140) & (bar[..., 0] < 90)
    assert red.any() and blue.any() and np.argwhere(red)[:, 0].mean() < np.argwhere(blue)[:, 0].mean()
    assert (np.abs(a[y : y + h, x : x + w] - 247).max(axis=2) > 12).mean() > 0.1  # the matrix is not blank
