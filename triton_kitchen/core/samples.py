"""Sample inputs: six photos as JPEG bytes (committed in ``triton_kitchen/data/samples/``; their origin and
licences are in the README there), the classifier's input tensor, ImageNet labels (from
:mod:`triton_kitchen.core.postprocessing`, which the models' Python stubs import too)."""

from __future__ import annotations

import io
from functools import lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING

import numpy as np

from triton_kitchen.core.postprocessing import LABELS_FILE, load_labels

if TYPE_CHECKING:
    from PIL import Image

SAMPLE_PHOTOS = ("chelsea", "coffee", "astronaut", "rocket", "camera", "stereo_motorcycle")
DEFAULT_PHOTO = "chelsea"  # a cat: the classifier's top-1 is a kind of cat
SAMPLES_DIR = files("triton_kitchen") / "data" / "samples"


@lru_cache(maxsize=len(SAMPLE_PHOTOS))
def sample_jpeg(name: str = DEFAULT_PHOTO) -> bytes:
    """One sample photo as the JPEG bytes the app sends (RGB, quality 90), read from its file."""
    if name not in SAMPLE_PHOTOS:
        raise ValueError(f"unknown sample photo {name!r}; expected one of {SAMPLE_PHOTOS}")
    return (SAMPLES_DIR / f"{name}.jpg").read_bytes()


def sample_image(name: str = DEFAULT_PHOTO) -> Image.Image:
    """One sample photo decoded by Pillow: an RGB image of the photo's own size."""
    from PIL import Image

    with Image.open(io.BytesIO(sample_jpeg(name))) as img:
        return img.convert("RGB")


def image_tensor(jpeg: bytes) -> np.ndarray:
    """The classifier's FP32 [1, 3, 224, 224] input for an encoded image (client-side preprocessing)."""
    from triton_kitchen.core.imaging import preprocess_bytes

    return preprocess_bytes(jpeg)[None]


def imagenet_labels() -> tuple[str, ...]:
    """The 1000 ImageNet class names in class-id order; empty when the labels file is missing."""
    try:
        return load_labels(LABELS_FILE)
    except OSError:
        return ()


__all__ = [
    "DEFAULT_PHOTO",
    "LABELS_FILE",
    "SAMPLE_PHOTOS",
    "SAMPLES_DIR",
    "image_tensor",
    "imagenet_labels",
    "sample_image",
    "sample_jpeg",
]
