"""benchmarks/page_timing.py's pairing of each page sample with a floor sample (no browser, no server)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from page_timing import paired_fresh  # noqa: E402


def test_a_pair_is_page_then_floor_whichever_was_measured_first():
    order: list[str] = []

    def page():
        order.append("page")
        return (1.0, 2.0)

    def floor():
        order.append("floor")
        return (0.5, 1.0)

    assert paired_fresh(page, floor, floor_first=True) == ((1.0, 2.0), (0.5, 1.0))
    assert paired_fresh(page, floor, floor_first=False) == ((1.0, 2.0), (0.5, 1.0))
    assert order == ["floor", "page", "page", "floor"]
