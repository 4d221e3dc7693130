"""Bad input refused before it reaches a server: a fifty-megabyte upload.

The tests that need the server, the app or a browser: tests/live/test_bad_input_live.py."""

from __future__ import annotations

import pytest
from _shared.bad_input import message_in_every_language

from triton_kitchen.core.imaging import MAX_BYTES, ImageError, load_image


def test_fifty_megabyte_upload_is_refused_before_it_reaches_the_server():
    big = b"\xff\xd8\xff" + b"\0" * (50 * 2**20)
    assert len(big) > MAX_BYTES
    with pytest.raises(ImageError) as err:
        load_image(big)
    assert err.value.code == "too_large"
    message_in_every_language("upload_too_large")
