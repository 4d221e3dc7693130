"""Chapter 7's demo: the tutorial's client code run against an Endpoint, plus sample photos.

The tutorial function is kept as it is written in the lesson (``ensemble_pipeline``, ``input_image``,
``output_label``); :func:`run_tutorial` runs it over HTTP or gRPC and times each call. Deliberate
mistakes (wrong tensor name, data type, shape) can be switched on to show Triton's own messages.
"""

from __future__ import annotations

import io
from functools import lru_cache

import numpy as np

SAMPLE_PHOTOS = ("chelsea", "coffee", "astronaut", "rocket", "camera", "stereo_motorcycle")


@lru_cache(maxsize=len(SAMPLE_PHOTOS))
def sample_jpeg(name: str, quality: int = 90) -> bytes:
    """One of scikit-image's offline sample photos, as JPEG bytes."""
    from PIL import Image
    from skimage import data

    if name not in SAMPLE_PHOTOS:
        raise ValueError(f"unknown sample photo {name!r}; expected one of {SAMPLE_PHOTOS}")
    array = getattr(data, name)()
    if name == "stereo_motorcycle":
        array = array[0]
    buf = io.BytesIO()
    Image.fromarray(np.asarray(array)).convert("RGB").save(buf, "JPEG", quality=quality)
    return buf.getvalue()
