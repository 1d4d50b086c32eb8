"""Structured slices of a conv layer's Jacobian against tape.jacobian, bad specs, the
budget on the sliced size, the max-|J| pooling and the PNG figure."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import EXAMPLES

CONV = EXAMPLES / "jacobian_conv.py"
OF, WRT = "convnet/conv/Relu", "convnet/conv/kernel"


class Reference:
    """tape.jacobian of the conv layer's output w.r.t. its kernel, from a fresh run of the
    script. The whole batch's (73,728 x 400, with pfor's 73,728-fold tiled activations) does not
    fit in memory, so one image at a time: a conv output element reads only its own image."""

    def __init__(self) -> None:
        self.ns = runpy.run_path(str(CONV))
        self.done: dict[int, np.ndarray] = {}

    def __getitem__(self, b: int) -> np.ndarray:
        """J(out[b], kernel): (24, 24, 16, 5, 5, 1, 16)."""
        import tensorflow as tf

        if b not in self.done:
            layer = self.ns["model"].get_layer("conv")
            with tf.GradientTape() as tape:
                out = layer(self.ns["images"][b : b + 1])[0]
            self.done[b] = tape.jacobian(out, layer.kernel).numpy()
        return self.done[b]


@pytest.fixture(scope="module")
def conv():
    """The analyzed example's session and the independent reference."""
    from tfviz.analysis.diagnose import analysis
    from tfviz.jacobian.session import Session

    session = Session.from_analysis(analysis(str(CONV)))
    return session, Reference()


def test_output_slice_equals_tape_jacobian(conv):
    session, full = conv
    j = session.jacobian(OF, WRT, of_index=[5, None, None, 3])
    assert j.status == "ok", j.message
    got = j.array()
    want = full[5][:, :, 3]
    assert got.shape == want.shape == (24, 24, 5, 5, 1, 16)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert np.count_nonzero(got) > 0 and j.out_index == [5, None, None, 3] and j.in_index is None


def test_input_slice_and_both_and_ranges(conv):
    session, full = conv
    j = session.jacobian(OF, WRT, wrt_index=[None, None, None, 7], of_index=[0, None, None, None])
    np.testing.assert_allclose(j.array(), full[0][..., 7], rtol=1e-5, atol=1e-6)
    for how in ("reverse", "forward"):  # both modes pick the same rows and columns
        j = session.jacobian(OF, WRT, of_index=[1, [2, 5], None, 3], wrt_index=[[1, 3], None, 0, 3], mode=how)
        assert j.mode == how
        np.testing.assert_allclose(j.array(), full[1][2:5, :, 3][..., 1:3, :, 0, 3], rtol=1e-5, atol=1e-6)
    # a flat range counts within the structured slice's elements
    j = session.jacobian(OF, WRT, of_index=[2, None, None, 0], out_range=[10, 30], in_range=[0, 50])
    np.testing.assert_allclose(
        j.array(), full[2][:, :, 0].reshape(576, 400)[10:30, :50], rtol=1e-5, atol=1e-6
    )


def test_budget_uses_the_sliced_size_and_offers_structured_slices(conv):
    from tfviz.jacobian.data import JacobianError

    session, full = conv
    one = 24 * 24 * 16 * 400 * 4  # one batch element
    with pytest.raises(JacobianError) as err:
        session.jacobian(OF, WRT, budget=one)  # all eight are 8x that
    e = err.value.to_dict()
    assert e["size_bytes"] == 8 * one and e["of_shape"] == [8, 24, 24, 16]
    first = e["offers"][0]
    assert first["of_index"] == [0, None, None, None] and first["bytes"] == one
    j = session.jacobian(OF, WRT, budget=one, of_index=first["of_index"])  # fits now
    np.testing.assert_allclose(j.array(), full[0], rtol=1e-5, atol=1e-6)
    assert np.count_nonzero(full[0]) > 0.01 * full[0].size  # a real check, not zeros against zeros


@pytest.mark.parametrize(
    "spec, words",
    [
        ([0, None, None], "has 3 entries but 'convnet/conv/Relu' has 4 dimensions (8, 24, 24, 16)"),
        ([8, None, None, None], "index 8 of dimension 0"),
        ([0, [3, 30], None, None], "the range 3:30 of dimension 1"),
        ([0, None, None, -1], "index -1 of dimension 3"),
    ],
)
def test_bad_specs_name_the_dimension(conv, spec, words):
    from tfviz.jacobian.data import JacobianError

    with pytest.raises(JacobianError, match="of_index") as err:
        conv[0].jacobian(OF, WRT, of_index=spec)
    assert err.value.kind == "bad_request" and words in err.value.message


@pytest.mark.parametrize(
    "text, words", [("0,x,:", "entry 1 is 'x'"), ("1:2:3", "entry 0 is '1:2:3'"), ("", "entry 0 is ''")]
)
def test_spec_syntax(text, words):
    from tfviz.jacobian.slices import check_spec, parse_spec

    with pytest.raises(ValueError, match="--of-index takes one entry per dimension") as err:
        parse_spec(text, "--of-index")
    assert words in str(err.value)
    from tfviz.jacobian.data import JacobianError

    with pytest.raises(JacobianError, match='"of_index" must be a list'):
        check_spec([0, "all"], "of_index")


def test_cli_slices_and_bad_spec(tmp_path):
    out = tmp_path / "j.npy"
    tfviz = Path(sys.executable).with_name("tfviz")  # the installed command, as a user runs it
    if not tfviz.exists():
        pytest.skip("the tfviz command is not installed")
    base = [str(tfviz), "jacobian", str(CONV), "--of", OF, "--wrt", WRT]
    r = subprocess.run(
        [*base, "--of-index", "0,:,:,3", "--wrt-index", ":,:,:,3", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert np.load(out).shape == (24, 24, 5, 5, 1)
    r = subprocess.run([*base, "--wrt-index", "0,0,0"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "--wrt-index" in r.stderr and "has 3 entries" in r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([*base, "--of-index", "0;1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "entry 0 is '0;1'" in r.stderr and "Traceback" not in r.stderr


def test_pool_keeps_isolated_peaks_and_their_sign():
    from tfviz.jacobian.pool import pool_max_abs

    m = np.zeros((1000, 90), np.float32)
    m[3, 7], m[500, 40], m[999, 89] = 1.0, -5.0, 0.25
    p, (by, bx) = pool_max_abs(m, 100, 30)
    assert (by, bx) == (10, 3) and p.shape == (100, 30)
    assert p[0, 2] == 1.0 and p[50, 13] == -5.0 and p[99, 29] == 0.25  # striding would drop them
    assert np.count_nonzero(p) == 3
    small, k = pool_max_abs(m[:50, :20], 100, 30)
    assert k == (1, 1) and small is not None and np.array_equal(small, m[:50, :20])
    uneven, (by, bx) = pool_max_abs(m[:, :89], 7, 7)  # blocks of 143 x 13, the last ones shorter
    assert uneven.shape == (7, 7) and uneven[3, 3] == -5.0 and uneven[6, 6] == 0.0


def _png_size_and_text(data: bytes) -> tuple[int, int, dict[str, str]]:
    import struct

    w, h = struct.unpack(">II", data[16:24])
    text, pos = {}, 8
    while pos < len(data):
        n = struct.unpack(">I", data[pos : pos + 4])[0]
        tag, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        if tag == b"tEXt":
            k, _, v = body.partition(b"\0")
            text[k.decode()] = v.decode("latin-1")
        pos += 12 + n
    return w, h, text


def test_png_figure_has_axes_names_and_colour_bar():
    from tfviz.jacobian.png import figure, to_png

    m = np.zeros((30, 12), np.float32)
    m[np.arange(30), np.arange(30) % 12] = np.linspace(-1, 2, 30)
    rgb, box = figure(m, "conv_out[0,:,:,3] (24, 24)", "kernel (5, 5, 1, 16)")
    x, y, w, h = box
    assert rgb.shape[0] > y + h + 20 and rgb.shape[1] > x + w + 40  # room for axes and the bar
    # the matrix itself, each element a block of k x k pixels in the CLI's colours
    from tfviz.jacobian.png import colorize

    k = w // 12
    assert w == 12 * k and h == 30 * k
    np.testing.assert_array_equal(rgb[y + k // 2 : y + h : k, x + k // 2 : x + w : k], colorize(m))
    # text (dark pixels) left of and below the matrix: tick labels and the tensor names
    dark = rgb.sum(axis=2) < 200
    assert dark[y : y + h, :x].sum() > 50 and dark[y + h + 2 :, x : x + w].sum() > 50
    # the colour bar: a column right of the matrix running from red (top) through white to blue
    bar = rgb[y + 2 : y + h - 2, x + w + 10 :]
    reds = (bar[..., 0] > 150) & (bar[..., 2] < 80)
    blues = (bar[..., 2] > 140) & (bar[..., 0] < 80)
    assert reds.any() and blues.any()
    assert np.argwhere(reds)[:, 0].min() < np.argwhere(blues)[:, 0].min()
    width, height, text = _png_size_and_text(to_png(m, "conv_out", "kernel"))
    rgb2, box2 = figure(m, "conv_out", "kernel")
    assert (width, height) == (rgb2.shape[1], rgb2.shape[0])
    assert text["tfviz:matrix"] == ",".join(map(str, box2)) and text["Software"].startswith("written")
