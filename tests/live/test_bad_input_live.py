"""Bad input, through the real server: every case gets a clear, translated message and breaks nothing.

The tests of this topic that need no server, app or browser: tests/unit/test_bad_input.py."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from _shared.bad_input import message_in_every_language
from PIL import Image

from triton_kitchen.core.classify import ClassifyError, classify
from triton_kitchen.core.samples import sample_image
from triton_kitchen.labs.demo import run_tutorial


def encoded(img: Image.Image, fmt: str) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt)
    return buf.getvalue()


def png_bomb(width: int = 40000, height: int = 40000) -> bytes:
    """A tiny PNG whose header declares a huge image (a decompression bomb)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = zlib.compress(b"\x00" * (width * 3 + 1) * 4)  # a few rows; the header is what matters
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


@pytest.fixture(scope="module")
def photo() -> Image.Image:
    return sample_image("coffee")


def bad_images(photo) -> dict[str, tuple[bytes, str]]:
    jpeg = encoded(photo, "JPEG")
    return {
        "text": (b"this is not an image at all", "not_an_image"),
        "zero_bytes": (b"", "empty"),
        "truncated_jpeg": (jpeg[: len(jpeg) // 3], "truncated"),
        "decompression_bomb": (png_bomb(), "too_large"),
    }


@pytest.mark.parametrize("case", ["text", "zero_bytes", "truncated_jpeg", "decompression_bomb"])
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_bad_image_gets_a_translated_message(server, photo, case, protocol):
    data, code = bad_images(photo)[case]
    with pytest.raises(ClassifyError) as err:
        classify(server.endpoint, data, protocol=protocol)
    assert err.value.code == code, err.value.detail
    message_in_every_language(code)


@pytest.mark.parametrize("mode", ["CMYK", "L", "RGBA", "I;16", "P", "1"])
def test_unusual_pixel_modes_classify(server, photo, mode):
    img = (
        photo.convert(mode)
        if mode != "I;16"
        else Image.fromarray((np.asarray(photo.convert("L")) * 257).astype("<u2"))
    )
    fmt = "JPEG" if mode in ("CMYK", "L") else "PNG" if mode != "I;16" else "TIFF"
    result = classify(server.endpoint, encoded(img, fmt), protocol="grpc")
    assert len(result.labels) == 5 and 0 < result.scores[0] <= 1
    if mode in ("CMYK", "RGBA", "P"):  # colour survives: still a cup of coffee
        assert result.labels[0] in {"espresso", "cup", "coffee mug"}


@pytest.mark.parametrize(
    "mistake,code",
    [
        ("tensor_name", "wrong_tensor_name"),
        ("dtype", "wrong_dtype"),
        ("shape", "wrong_shape"),
        ("dead_server", "nothing_listening"),
    ],
)
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_python_demo_mistakes_get_translated_messages(server, mistake, code, protocol):
    run = run_tutorial(server.endpoint, protocol, mistake=mistake)
    assert not run.ok and run.error_code == code, (run.error_code, run.error)
    assert run.error and run.ms < 10_000
    message_in_every_language(code)


def test_bad_input_breaks_nothing_for_others(server, photo):
    for data, _ in bad_images(photo).values():
        with pytest.raises(ClassifyError):
            classify(server.endpoint, data, protocol="grpc")
    result = classify(server.endpoint, encoded(photo, "JPEG"), protocol="http")
    assert result.labels[0] == "espresso"
