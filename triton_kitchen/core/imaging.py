"""Image decoding and classifier preprocessing, shared by the app and Triton's ``preprocess`` model.

Deliberately small and dependency-light (numpy + Pillow only): the Triton Python backend stub
imports it.

* :func:`load_image` -- encoded bytes -> ``PIL.Image`` in RGB, or :class:`ImageError`;
* :func:`preprocess` -- RGB image -> FP32 ``[3, 224, 224]``: resize the short side to 256
  (bilinear), center-crop 224x224, ``(x - 127) / 128``, HWC -> CHW. That normalization is the
  one the EfficientNet-Lite0 weights were trained with (TF's Lite preprocessing); the ONNX
  graph does not normalize its input itself.
* :func:`preprocess_bytes` -- both in one call.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

__all__ = [
    "CROP_SIZE",
    "ERROR_CODES",
    "FORMATS",
    "MAX_BYTES",
    "MAX_PIXELS",
    "RESIZE_SIZE",
    "ImageError",
    "load_image",
    "preprocess",
    "preprocess_bytes",
]

RESIZE_SIZE = 256
CROP_SIZE = 224
MEAN = 127.0
SCALE = 128.0
MAX_BYTES = 32 * 1024 * 1024
MAX_PIXELS = 50_000_000  # width * height declared in the header; checked before decoding
# Decoders we accept. Pillow would otherwise also try formats such as EPS (runs Ghostscript).
FORMATS = ("JPEG", "PNG", "GIF", "BMP", "TIFF", "WEBP", "PPM")

ERROR_CODES = {
    "empty": "no bytes were given",
    "too_large": "the file or its declared pixel size is over the limit (decompression-bomb guard)",
    "not_an_image": "the bytes are not an image in a supported format",
    "truncated": "the image data ends early",
    "corrupt": "the image data cannot be decoded",
    "unsupported": "the image's pixel mode cannot be converted to RGB",
}


class ImageError(ValueError):
    """A bad upload. ``code`` is a short stable key (see :data:`ERROR_CODES`) a UI can translate;
    ``detail`` is the English explanation. ``source``: as a KitchenError's (ui.errors reads
    ``error.image_<code>`` first)."""

    source = "image"

    def __init__(self, code: str, detail: str):
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


def load_image(data: bytes, max_pixels: int = MAX_PIXELS, max_bytes: int = MAX_BYTES) -> Image.Image:
    """Decode ``data`` into an RGB ``PIL.Image`` (EXIF orientation applied, first frame of
    animations, alpha composited onto white, 16-bit and float grayscale scaled to 8 bits)."""
    if data is None or len(data) == 0:
        raise ImageError("empty", ERROR_CODES["empty"])
    if len(data) > max_bytes:
        raise ImageError("too_large", f"{len(data)} bytes is over the {max_bytes}-byte limit")
    if ImageFile.LOAD_TRUNCATED_IMAGES:
        raise RuntimeError("PIL.ImageFile.LOAD_TRUNCATED_IMAGES is set: truncated uploads would pass")
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            img = Image.open(io.BytesIO(bytes(data)), formats=FORMATS)
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
            raise ImageError("too_large", str(e)) from e
        except UnidentifiedImageError as e:
            raise ImageError("not_an_image", ERROR_CODES["not_an_image"]) from e
        except (OSError, SyntaxError, ValueError) as e:  # a recognised header that is broken
            raise ImageError("corrupt", f"{type(e).__name__}: {e}") from e
        width, height = img.size
        if width <= 0 or height <= 0:
            raise ImageError("corrupt", f"declared size {width}x{height}")
        if width * height > max_pixels:
            raise ImageError(
                "too_large", f"declared size {width}x{height} is over the {max_pixels}-pixel limit"
            )
        try:
            img.load()
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
            raise ImageError("too_large", str(e)) from e
        except (OSError, SyntaxError, ValueError, EOFError) as e:
            msg = f"{type(e).__name__}: {e}"
            code = "truncated" if isinstance(e, EOFError) or "truncated" in str(e).lower() else "corrupt"
            raise ImageError(code, msg) from e
    try:
        img = ImageOps.exif_transpose(img)
    except Exception:  # broken EXIF must not lose the picture
        pass
    return _to_rgb(img)


def _to_rgb(img: Image.Image) -> Image.Image:
    mode = img.mode
    if mode == "RGB":
        return img
    try:
        if mode.startswith("I") or mode == "F":
            return Image.fromarray(_gray_to_uint8(np.asarray(img), mode), "L").convert("RGB")
        if mode == "P":
            img = img.convert("RGBA" if "transparency" in img.info else "RGB")
            if img.mode == "RGB":
                return img
            mode = "RGBA"
        if mode in ("RGBA", "LA", "PA", "RGBa", "La"):
            rgba = img.convert("RGBA")
            background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            return Image.alpha_composite(background, rgba).convert("RGB")
        return img.convert("RGB")  # L, 1, CMYK, YCbCr, RGBX, ...
    except (ValueError, OSError) as e:
        raise ImageError("unsupported", f"cannot convert mode {mode} to RGB: {e}") from e


def _gray_to_uint8(a: np.ndarray, mode: str) -> np.ndarray:
    """16-bit / 32-bit integer or float grayscale -> uint8, keeping the full range (not clipping)."""
    x = a.astype(np.float64)
    hi = float(x.max()) if x.size else 0.0
    if mode.startswith("I;16"):
        x = x / 257.0  # 0..65535 -> 0..255
    elif mode == "F" and 0.0 <= float(x.min()) and hi <= 1.0:
        x = x * 255.0  # float images in 0..1
    elif hi > 255.0:
        x = x / 257.0 if hi <= 65535.0 else x * (255.0 / hi)  # 16-bit data held in mode I, or wider
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def preprocess(img: Image.Image) -> np.ndarray:
    """RGB image -> FP32 ``[3, 224, 224]``: short side to 256 (bilinear), center crop 224,
    ``(x - 127) / 128``, CHW.

    Resize and crop are one Pillow call (``resize`` with a source ``box``): the same pixels as
    resizing the whole image and then cropping, without building the resized image (which an
    extreme aspect ratio would make huge)."""
    if img.mode != "RGB":
        img = _to_rgb(img)
    w, h = img.size
    scale = RESIZE_SIZE / min(w, h)
    rw, rh = max(CROP_SIZE, round(w * scale)), max(CROP_SIZE, round(h * scale))
    left, top = (rw - CROP_SIZE) // 2, (rh - CROP_SIZE) // 2
    sx, sy = w / rw, h / rh  # source pixels per resized pixel, as Pillow's full resize uses
    box = (left * sx, top * sy, (left + CROP_SIZE) * sx, (top + CROP_SIZE) * sy)
    crop = img.resize((CROP_SIZE, CROP_SIZE), Image.Resampling.BILINEAR, box=box)
    x = np.asarray(crop, dtype=np.float32)
    return np.ascontiguousarray(((x - MEAN) / SCALE).transpose(2, 0, 1))


def preprocess_bytes(data: bytes) -> np.ndarray:
    """Encoded image bytes -> FP32 ``[3, 224, 224]`` (raises :class:`ImageError` on bad input)."""
    return preprocess(load_image(data))
