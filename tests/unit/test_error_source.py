"""ui.errors picks an error's own words by its ``source`` attribute, never by its class name: a subclass reads its
parent's words, a class that only looks like a known one reads the shared words."""

from __future__ import annotations

import pytest

from triton_kitchen.core.config import ConfigError
from triton_kitchen.core.imaging import ImageError
from triton_kitchen.core.override import BatchingError
from triton_kitchen.labs.peek import PeekError
from triton_kitchen.tools.calibration import CalibrationError
from triton_kitchen.tools.flow import FlowError
from triton_kitchen.tools.inside import InsideError
from ui.errors import message_for


@pytest.mark.parametrize(
    ("error", "key"),
    [
        (FlowError("bad_config", "x"), "error.flow_bad_config"),
        (BatchingError("x", "busy"), "error.batching_busy"),
        (CalibrationError("no_batching", "x"), "error.calibration_no_batching"),
        (InsideError("unknown_model", "x"), "error.inside_unknown_model"),
        (PeekError("not_found", "x"), "error.peek_not_found"),
        (ConfigError("x", code="too_large"), "error.config_too_large"),
        (ImageError("too_large", "x"), "error.image_too_large"),
    ],
)
def test_each_source_reads_its_own_words_first(error, key):
    assert message_for(error, "en").key == key
    assert message_for(error, "zh").key == key


def test_a_subclass_reads_its_parents_words_whatever_its_name():
    class Renamed(FlowError):
        pass

    assert message_for(Renamed("bad_config", "x"), "en").key == "error.flow_bad_config"


def test_a_class_name_alone_gives_no_source():
    class FlowError(Exception):  # the name of a real source, without its attribute
        code = "bad_config"

    assert message_for(FlowError("x"), "en").key == "error.bad_config"
