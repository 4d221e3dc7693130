"""The live demos' config edits, offline: swapping one input_map entry, reversed steps that still load.

The tests that need the server, the app or a browser: tests/live/test_live_demos_live.py."""

from __future__ import annotations

from triton_kitchen.core.config import parse_config
from triton_kitchen.labs import mistakes
from triton_kitchen.tools import repository as repo


def test_swap_input_map_swaps_one_entry_and_keeps_lines():
    text = (repo.DEFAULT_REPOSITORY / "image_classifier" / "config.pbtxt").read_text()
    swapped = mistakes.swap_input_map(text)
    assert swapped.count("\n") == text.count("\n")
    changed = [(a, b) for a, b in zip(text.splitlines(), swapped.splitlines(), strict=True) if a != b]
    assert len(changed) == 1
    ((before, after),) = changed
    assert "input_map" in after and before.replace("image_bytes", "X") != after
    check = repo.check_ensemble_text(swapped, "image_classifier")
    assert not check.ok


def test_reverse_steps_still_loads():
    text = (repo.DEFAULT_REPOSITORY / "image_classifier" / "config.pbtxt").read_text()
    reversed_text = mistakes.reverse_steps(text)
    cfg = parse_config(reversed_text)
    assert [s.model_name for s in cfg.ensemble_scheduling.step] == ["postprocess", "classifier", "preprocess"]
    assert repo.check_ensemble_text(reversed_text, "image_classifier").ok
