"""Sample inputs: scikit-image's offline photos as JPEG bytes, the classifier's input tensor, ImageNet
labels (from :mod:`triton_kitchen.core.postprocessing`, which the models' Python stubs import too)."""

from __future__ import annotations

import io
from functools import lru_cache

import numpy as np

from triton_kitchen.core.postprocessing import LABELS_FILE, load_labels

SAMPLE_PHOTOS = ("chelsea", "coffee", "astronaut", "rocket", "camera", "stereo_motorcycle")
DEFAULT_PHOTO = "chelsea"  # a cat: the classifier's top-1 is a kind of cat


@lru_cache(maxsize=2 * len(SAMPLE_PHOTOS))
def sample_jpeg(name: str = DEFAULT_PHOTO, quality: int = 90) -> bytes:
    """One of scikit-image's offline sample photos, as JPEG bytes."""
    from PIL import Image
    from skimage import data

    if name not in SAMPLE_PHOTOS:
        raise ValueError(f"unknown sample photo {name!r}; expected one of {SAMPLE_PHOTOS}")
    array = getattr(data, name)()
    if name == "stereo_motorcycle":  # a stereo pair: keep the left image
        array = array[0]
    buf = io.BytesIO()
    Image.fromarray(np.asarray(array)).convert("RGB").save(buf, "JPEG", quality=quality)
    return buf.getvalue()


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


__all__ = ["DEFAULT_PHOTO", "LABELS_FILE", "SAMPLE_PHOTOS", "image_tensor", "imagenet_labels", "sample_jpeg"]
