"""app/graph/pngfile: the parallel PNG encoder the image export writes PNGs with.

Checked without Qt: the chunks are parsed here, the image data is inflated with zlib
(which verifies the combined Adler-32) and compared byte for byte with the pixels.
"""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest

from app.graph.export import pngfile


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    assert data[:8] == pngfile.SIGNATURE
    out, i = [], 8
    while i < len(data):
        (n,) = struct.unpack(">I", data[i : i + 4])
        kind, body = data[i + 4 : i + 8], data[i + 8 : i + 8 + n]
        (crc,) = struct.unpack(">I", data[i + 8 + n : i + 12 + n])
        assert crc == zlib.crc32(kind + body), kind
        out.append((kind, body))
        i += 12 + n
    return out


def _decode(data: bytes) -> tuple[np.ndarray, list[tuple[bytes, bytes]]]:
    chunks = _chunks(data)
    assert chunks[0][0] == b"IHDR" and chunks[-1] == (b"IEND", b"")
    w, h, depth, colour, comp, filt, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour, comp, filt, interlace) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))  # checks the Adler-32
    rows = np.frombuffer(raw, np.uint8).reshape(h, 1 + 3 * w)
    assert not rows[:, 0].any()  # filter: none
    return rows[:, 1:].reshape(h, w, 3), chunks


@pytest.mark.parametrize("band_bytes", [pngfile.BAND_BYTES, 1000, 1])
def test_round_trip_is_exact_in_one_band_or_many(monkeypatch, band_bytes):
    monkeypatch.setattr(pngfile, "BAND_BYTES", band_bytes)
    rng = np.random.default_rng(0)
    bgrx = rng.integers(0, 256, (37, 53, 4), dtype=np.uint8)
    buf = io.BytesIO()
    pngfile.write_png(buf, 53, 37, pngfile.bands_of(bgrx), (2, 1, 0), workers=3)
    rgb, chunks = _decode(buf.getvalue())
    assert np.array_equal(rgb, bgrx[:, :, 2::-1])
    assert sum(k == b"IDAT" for k, _ in chunks) >= 1


def test_strided_pixels_and_metadata():
    """A view with row padding (a QImage's scanlines) and the title in and out of Latin-1."""
    padded = np.zeros((5, 40), np.uint8)
    padded[:, :36] = np.arange(36, dtype=np.uint8)
    view = padded[:, :36].reshape(5, 9, 4)
    buf = io.BytesIO()
    pngfile.write_png(
        buf,
        9,
        5,
        [view[:2], view[2:]],
        (0, 1, 2),
        dots_per_meter=3780,
        text={"Title": "svd.py  ·  loss  —  1 broken", "Software": "tfviz"},
    )
    rgb, chunks = _decode(buf.getvalue())
    assert np.array_equal(rgb, view[:, :, :3])
    kinds = dict(chunks)
    assert kinds[b"pHYs"] == struct.pack(">IIB", 3780, 3780, 1)
    assert kinds[b"tEXt"] == b"Software\0tfviz"
    assert kinds[b"iTXt"] == b"Title\0\0\0\0\0" + "svd.py  ·  loss  —  1 broken".encode()


def test_adler32_combine_matches_zlib():
    a, b = b"gradient " * 1000, bytes(range(256)) * 300
    assert pngfile.adler32_combine(zlib.adler32(a), zlib.adler32(b), len(b)) == zlib.adler32(a + b)
    assert pngfile.adler32_combine(zlib.adler32(a), zlib.adler32(b""), 0) == zlib.adler32(a)


def test_bands_drawn_one_after_another_make_the_image():
    """Bands of any heights, made by a generator as the encoder takes them."""
    img = np.random.default_rng(1).integers(0, 256, (20, 7, 3), dtype=np.uint8)
    cuts = [0, 1, 9, 10, 20]
    made = []

    def bands():
        for y0, y1 in zip(cuts, cuts[1:]):
            made.append(y0)
            yield img[y0:y1]

    buf = io.BytesIO()
    pngfile.write_png(buf, 7, 20, bands(), workers=2)
    assert made == cuts[:-1]
    assert np.array_equal(_decode(buf.getvalue())[0], img)


def test_refuses_bands_that_do_not_make_the_image():
    img = np.zeros((6, 4, 3), np.uint8)
    with pytest.raises(ValueError, match="hold 4 rows, not the image's 6"):
        pngfile.write_png(io.BytesIO(), 4, 6, [img[:4]])
    with pytest.raises(ValueError, match="more than the 3 rows"):
        pngfile.write_png(io.BytesIO(), 4, 3, [img[:2], img[2:4]])
    with pytest.raises(ValueError, match=r"\(rows, 5, channels\) of uint8"):
        pngfile.write_png(io.BytesIO(), 5, 6, [img])
    with pytest.raises(ValueError, match="uint8"):
        pngfile.write_png(io.BytesIO(), 4, 6, [img.astype(np.float32)])
    with pytest.raises(ValueError, match="must have pixels"):
        pngfile.write_png(io.BytesIO(), 0, 6, [])
