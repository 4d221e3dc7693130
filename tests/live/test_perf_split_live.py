"""Chapter 10's perf_analyzer drill on the real server: one repeated input measures the cache, many inputs the
model, whose split shows the queue (4 in flight, one 40 ms instance)."""

from __future__ import annotations

import time

import pytest
from conftest import open_app_page, predict_and_press, shown_text

from triton_kitchen.core import lessons
from triton_kitchen.labs import perf_split


def test_one_input_measures_the_cache_many_the_model(server):
    start = time.monotonic()
    result = perf_split.same_vs_varied(server.endpoint)
    assert result.outcome() == "cache", (result.same.throughput_rps, result.varied.throughput_rps)
    assert result.varied.throughput_rps < 1000 / 40 * 1.2  # one instance, 40 ms a run
    assert result.varied.server["compute_infer_ms"] >= 38 and result.queue_share() > 0.4
    assert "--input-data" in result.varied.command
    assert time.monotonic() - start < 20


@pytest.mark.app
def test_the_page_shows_the_split(embedded):
    lang = "zh"
    at = open_app_page("views/ch10_operations.py", lang)
    assert "--request-rate-range" in shown_text(at) and "--trace-config" in shown_text(at)
    predict_and_press(at, "ch10_pa", "model", "ch10_pa_run")
    assert at.session_state["ch10_pa_result"].outcome() == "cache"
    shown = shown_text(at)
    assert lessons.t("ch10.pa_cache", lang) in shown and lessons.t("predict.wrong", lang) in shown
    assert "perf_analyzer" in shown
