"""Whether the batching lab's gain can be trusted: how far each setting's throughput moved within its own run
(``stability`` of :func:`triton_kitchen.labs.batching.compare_batching`, perf_analyzer's 10% rule), and what the
same settings gave in this session's previous run."""

from __future__ import annotations

import streamlit as st

from ui.i18n import t

HISTORY_KEY = "batch_history"  # [(settings, concurrency, duration), gain] of this session's runs, newest last
KEEP = 10


def _key(result: dict) -> tuple:
    return (result["on"].settings.label(), result["concurrency"], result["duration_s"])


def remember(result: dict) -> None:
    """Keep a finished comparison's gain for the next one with the same settings."""
    if result.get("throughput_ratio") is None or not result.get("on"):
        return
    history = st.session_state.setdefault(HISTORY_KEY, [])
    history.append((_key(result), result["throughput_ratio"]))
    del history[:-KEEP]


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def _gain(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def show(result: dict) -> None:
    """A warning when either setting's windows differ by more than 10% (with the gain those windows allow), a
    caption when they agree; a note when the previous run with the same settings gave a gain 20% away."""
    stability = result.get("stability")
    if stability:
        off, on = stability["spread_pct"]
        low, high = stability["gain_range"]
        words = dict(n=stability["parts"], w=f"{stability['window_s']:.1f}", off=_pct(off), on=_pct(on))
        if stability["stable"]:
            st.caption(t("lab_batching.stable", **words))
        else:
            st.warning(t("lab_batching.unstable", low=_gain(low), high=_gain(high), **words), icon="📉")
    history = st.session_state.get(HISTORY_KEY, [])
    ratio = result.get("throughput_ratio")
    if not history or ratio is None or not result.get("on"):
        return
    key = _key(result)
    earlier = [gain for k, gain in history[:-1] if k == key]
    if history[-1][0] == key and earlier and abs(ratio / earlier[-1] - 1) > 0.2:
        st.info(t("lab_batching.swing", prev=_gain(earlier[-1]), now=_gain(ratio)), icon="↕️")
