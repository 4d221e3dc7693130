"""The batching lab says when its gain cannot be trusted: each setting's run is cut into windows (one a second, at
least three), and a spread over 10% between them (perf_analyzer's rule) is a warning that names the gain the
windows allow; a previous run of the same settings 20% away is named too. No server: completion times and
results made here."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import lessons
from triton_kitchen.tools.stability import gain_stability, merge_windows, window_rates


def _even(rate: float, seconds: float) -> list[float]:
    """Completions at a steady ``rate`` over ``seconds``."""
    n = int(rate * seconds)
    return [(i + 0.5) / rate for i in range(n)]


def test_window_rates():
    assert window_rates(_even(40, 3), 3.0, 3) == [40.0, 40.0, 40.0]
    assert window_rates([0.1, 0.2, 2.9, 3.0], 3.0, 3) == [
        2.0,
        0.0,
        2.0,
    ]  # the last instant is in the last window
    assert window_rates([], 3.0, 0) == []


def test_a_steady_pair_is_stable_and_a_swinging_one_names_the_gain_it_allows():
    steady = gain_stability((_even(40, 3), 3.0), (_even(50, 3), 3.0))
    assert steady.stable and steady.parts == 3 and steady.spread_pct == (0.0, 0.0)
    assert steady.gain_low == pytest.approx(1.25) and steady.gain_high == pytest.approx(1.25)
    # batching on: 60/s for a second, then the machine got busy (30/s)
    swinging = _even(60, 1) + [1 + c for c in _even(30, 2)]
    loose = gain_stability((_even(40, 3), 3.0), (swinging, 3.0))
    assert not loose.stable and loose.spread_pct[1] == pytest.approx(30 / 40 * 100)
    assert (loose.gain_low, loose.gain_high) == (pytest.approx(0.75), pytest.approx(1.5))
    assert gain_stability((_even(40, 8), 8.0), (_even(40, 8), 8.0)).parts == 8  # one window a second


def test_merged_windows_keep_their_completions_end_to_end():
    from triton_kitchen.tools.bench import BenchResult, percentiles

    def window(completions):
        r = BenchResult(
            "grpc", "m", 1, len(completions), 0, 0.0, percentiles([]), 0, 0, None, None, window_s=1.0
        )
        r.completions_s, r.latencies_ms = completions, [1.0] * len(completions)
        return r

    merged = merge_windows([window([0.5]), window([0.25, 0.75])])
    assert merged.completions_s == [0.5, 1.25, 1.75] and merged.window_s == 2.0


def _page(stable: bool, ratio: float, runs: int) -> None:
    import streamlit as st

    from triton_kitchen.tools.batch_runs import BatchingSettings, ExperimentResult
    from ui import batching_stability

    st.query_params["lang"] = "en"
    on = ExperimentResult(BatchingSettings(True, 2000, [], 1), 8, 50.0, {"p99": 1.0}, 150, 0, {})
    spread = (4.0, 3.0) if stable else (4.0, 30.0)
    result = {
        "on": on,
        "concurrency": 8,
        "duration_s": 3.0,
        "throughput_ratio": ratio,
        "stability": {
            "stable": stable,
            "parts": 3,
            "window_s": 1.0,
            "spread_pct": spread,
            "gain_range": [0.75, 1.5],
        },
    }
    for _ in range(runs):
        batching_stability.remember(result)
    batching_stability.show(result)


@pytest.mark.app
def test_the_page_warns_when_the_windows_disagree():
    at = AppTest.from_function(_page, args=(False, 1.1, 1), default_timeout=30)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    words = dict(n=3, w="1.0", off="4", on="30", low="0.75", high="1.50")
    assert [w.value for w in at.warning] == [lessons.t("lab_batching.unstable", "en", **words)]
    assert "×0.75" in at.warning[0].value and "×1.50" in at.warning[0].value

    at = AppTest.from_function(_page, args=(True, 1.1, 1), default_timeout=30)
    at.run()
    assert not at.warning
    assert lessons.t("lab_batching.stable", "en", n=3, w="1.0", off="4", on="3") in [
        c.value for c in at.caption
    ]


@pytest.mark.app
def test_a_rerun_of_the_same_settings_far_from_the_last_is_named():
    at = AppTest.from_function(_page, args=(True, 1.1, 1), default_timeout=30)
    at.run()
    assert not at.info
    at.session_state["batch_history"] = [((at.session_state["batch_history"][0][0]), 0.73)]
    at.run()  # the same settings again, now ×1.10 after ×0.73
    assert [i.value for i in at.info] == [lessons.t("lab_batching.swing", "en", prev="0.73", now="1.10")]
