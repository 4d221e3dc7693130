"""Image loading and classifier preprocessing (triton_kitchen.core.imaging): every pixel mode, bad uploads."""

from __future__ import annotations

import io
import struct
import time
import zlib

import numpy as np
import pytest
from PIL import Image

from triton_kitchen.core.imaging import ImageError, load_image, preprocess, preprocess_bytes
from triton_kitchen.core.samples import sample_image


def encode(img: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def photo() -> Image.Image:
    return sample_image("chelsea")  # 451x300 RGB


def check_tensor(x: np.ndarray) -> None:
    assert x.shape == (3, 224, 224)
    assert x.dtype == np.float32
    assert np.isfinite(x).all()
    assert x.min() >= -127 / 128 and x.max() <= 128 / 128


def _gray16() -> Image.Image:
    a = (np.linspace(0, 65535, 300 * 400).reshape(300, 400)).astype(np.uint16)
    return Image.fromarray(a)


MODES = {
    "RGB-jpeg": lambda: encode(photo(), "JPEG", quality=90),
    "RGB-png": lambda: encode(photo(), "PNG"),
    "L": lambda: encode(photo().convert("L"), "PNG"),
    "1": lambda: encode(photo().convert("1"), "PNG"),
    "P": lambda: encode(photo().convert("P"), "GIF"),
    "P-transparent": lambda: encode(photo().convert("P"), "PNG", transparency=0),
    "RGBA": lambda: encode(photo().convert("RGBA"), "PNG"),
    "LA": lambda: encode(photo().convert("LA"), "PNG"),
    "CMYK-jpeg": lambda: encode(photo().convert("CMYK"), "JPEG"),
    "CMYK-tiff": lambda: encode(photo().convert("CMYK"), "TIFF"),
    "I;16": lambda: encode(_gray16(), "PNG"),
    "I-tiff": lambda: encode(Image.fromarray(np.full((250, 300), 70000, np.int32)), "TIFF"),
    "F-tiff": lambda: encode(
        Image.fromarray(np.random.default_rng(0).random((250, 300), np.float32)), "TIFF"
    ),
    "BMP": lambda: encode(photo(), "BMP"),
    "WEBP": lambda: encode(photo(), "WEBP"),
    "PPM": lambda: encode(photo(), "PPM"),
}


@pytest.mark.parametrize("kind", sorted(MODES))
def test_every_mode_becomes_rgb_and_a_tensor(kind):
    raw = MODES[kind]()
    img = load_image(raw)
    assert img.mode == "RGB"
    check_tensor(preprocess(img))
    check_tensor(preprocess_bytes(raw))


def test_sixteen_bit_keeps_its_range():
    # Pillow's own I;16 -> L conversion clips everything above 255 to white; ours scales.
    img = load_image(encode(_gray16(), "PNG"))
    a = np.asarray(img)
    assert a.min() == 0 and a.max() == 255
    assert 100 < a.mean() < 155


def test_transparent_pixels_become_white():
    rgba = Image.new("RGBA", (300, 300), (0, 0, 0, 0))
    x = preprocess_bytes(encode(rgba, "PNG"))
    np.testing.assert_allclose(x, (255 - 127) / 128)


def test_preprocess_values_and_layout():
    # A left-red / right-blue image: channel 0 is red, the crop is centered.
    a = np.zeros((300, 600, 3), np.uint8)
    a[:, :300, 0] = 255
    a[:, 300:, 2] = 255
    x = preprocess(Image.fromarray(a))
    assert x[0, 112, 0] == pytest.approx(1.0) and x[2, 112, 0] == pytest.approx(-127 / 128)
    assert x[2, 112, 223] == pytest.approx(1.0) and x[0, 112, 223] == pytest.approx(-127 / 128)


def test_preprocess_matches_resize_then_crop():
    img = photo()
    w, h = img.size
    s = 256 / min(w, h)
    r = img.resize((round(w * s), round(h * s)), Image.Resampling.BILINEAR)
    left, top = (r.width - 224) // 2, (r.height - 224) // 2
    ref = (np.asarray(r.crop((left, top, left + 224, top + 224)), np.float32) - 127) / 128
    # one 8-bit rounding step at most
    np.testing.assert_allclose(preprocess(img), ref.transpose(2, 0, 1), atol=1 / 128 + 1e-6)


def test_small_and_extreme_aspect_images():
    check_tensor(preprocess(Image.new("RGB", (7, 5), (10, 200, 30))))
    t = time.perf_counter()
    check_tensor(preprocess(Image.new("RGB", (20000, 2), (10, 200, 30))))
    assert time.perf_counter() - t < 2.0  # no 256 x 2.5M intermediate image


def test_exif_orientation_is_applied():
    img = Image.new("RGB", (400, 200), (255, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise on display
    out = load_image(encode(img, "JPEG", exif=exif.tobytes()))
    assert out.size == (200, 400)


def test_empty_bytes():
    for raw in (b"", bytearray()):
        with pytest.raises(ImageError) as e:
            load_image(raw)
        assert e.value.code == "empty"


@pytest.mark.parametrize("raw", [b"hello, this is not an image", b"\x00" * 1000, b"%PDF-1.4\n%..."])
def test_not_an_image(raw):
    with pytest.raises(ImageError) as e:
        preprocess_bytes(raw)
    assert e.value.code == "not_an_image"
    assert isinstance(e.value, ValueError) and str(e.value).startswith("not_an_image")


def test_formats_outside_the_allow_list_are_refused():
    eps = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nshowpage\n"
    with pytest.raises(ImageError) as e:
        load_image(eps)
    assert e.value.code == "not_an_image"


def test_truncated_jpeg():
    raw = encode(photo(), "JPEG", quality=90)
    with pytest.raises(ImageError) as e:
        load_image(raw[: len(raw) // 2])
    assert e.value.code == "truncated"
    assert e.value.detail


def _png_declaring(width: int, height: int) -> bytes:
    """A tiny, valid-looking PNG whose header declares width x height (a decompression bomb)."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return (
            struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 64)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


@pytest.mark.parametrize("size", [(60_000, 60_000), (10_000, 6_000)])
def test_decompression_bomb(size):
    raw = _png_declaring(*size)
    assert len(raw) < 200
    t = time.perf_counter()
    with pytest.raises(ImageError) as e:
        load_image(raw)
    assert e.value.code == "too_large"
    assert time.perf_counter() - t < 1.0


def test_limits_are_parameters():
    raw = encode(photo(), "PNG")
    with pytest.raises(ImageError) as e:
        load_image(raw, max_bytes=100)
    assert e.value.code == "too_large"
    with pytest.raises(ImageError) as e:
        load_image(raw, max_pixels=1000)
    assert e.value.code == "too_large"
