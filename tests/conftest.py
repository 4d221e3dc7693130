"""Shared fixtures: one real embedded Triton server for the whole test session."""

from __future__ import annotations

import gc
import io

import numpy as np
import pytest
from PIL import Image

from triton_kitchen.server import EmbeddedServer


def pytest_sessionfinish(session, exitstatus):
    """Collect stray tritonclient objects while grpc still works (else their __del__ prints at exit)."""
    gc.collect()


@pytest.fixture(scope="session")
def server():
    """The real tritonserver on model_repository/, on free ports, shared by all tests."""
    srv = EmbeddedServer(http_port=0, grpc_port=0, metrics_port=0)
    srv.start(timeout=180)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def sample_jpegs() -> dict[str, bytes]:
    """scikit-image's offline sample photos, JPEG-encoded."""
    from skimage import data

    photos = {
        "chelsea": data.chelsea(),
        "coffee": data.coffee(),
        "camera": data.camera(),
        "motorcycle": data.stereo_motorcycle()[0],
    }
    out = {}
    for name, array in photos.items():
        buf = io.BytesIO()
        Image.fromarray(np.asarray(array)).convert("RGB").save(buf, "JPEG", quality=92)
        out[name] = buf.getvalue()
    return out


# Debian's chromium, driven by Playwright (its own browser download does not work on these machines).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",  # the closed network refuses Chromium's background connections
    "--disable-component-update",
    "--disable-sync",
]
