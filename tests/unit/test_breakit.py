"""The break-it lab's clients without a server: np.str_ refused for BYTES by both clients, np.bytes_ dropping NULs.

The tests that need the server, the app or a browser: tests/live/test_breakit_live.py."""

from __future__ import annotations

import numpy as np
import pytest

from triton_kitchen.labs import breakit


@pytest.mark.parametrize("make", ["http", "grpc"])
def test_np_str_is_refused_for_bytes_by_both_clients_and_np_bytes_drops_the_nuls(make):
    """Client-side facts the lab's case rests on (no server): numpy's fixed-width strings drop trailing NULs."""
    from tritonclient.utils import InferenceServerException

    module = __import__(f"tritonclient.{make}", fromlist=["InferInput"])
    with pytest.raises(InferenceServerException, match="expected BYTES"):
        module.InferInput("text", [1], "BYTES").set_data_from_numpy(np.array(["Triton\0\0"], dtype=np.str_))
    assert np.array([breakit.NUL_TEXT], dtype=np.bytes_)[0] == b"Triton"
    assert np.array([breakit.NUL_TEXT], dtype=object)[0] == breakit.NUL_TEXT
