"""The KServe REST module with nothing listening: not live, a connection error.

The tests that need the server, the app or a browser: tests/live/test_kserve_live.py."""

from __future__ import annotations

import pytest

from triton_kitchen.core import kserve
from triton_kitchen.core.server import free_port


def test_nothing_listening_is_not_live_and_raises_connection():
    dead = f"127.0.0.1:{free_port()}"
    assert not kserve.live(dead, timeout=0.5)
    with pytest.raises(kserve.KServeError) as info:
        kserve.model_config(dead, "classifier", timeout=0.5)
    assert info.value.code == "connection"
