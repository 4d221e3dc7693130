"""The dynamic batching lab: config overrides, batch statistics, the on/off ratio, and the original
config restored afterwards, on error too. One test reloads the shared classifier.

The tests of this topic that need no server, app or browser: tests/unit/test_batching.py."""

from __future__ import annotations

import conftest
import pytest
from _shared.pages import assert_human_table, frames, page, tz
from conftest import switch_page

from triton_kitchen.core import lessons, override
from triton_kitchen.labs import batching as Bt
from triton_kitchen.tools import batch_runs


@pytest.mark.timing
def test_batching_on_vs_off_and_the_config_is_always_restored(server, monkeypatch):
    ep = server.endpoint
    original = override.current_config(ep)
    assert original["dynamic_batching"]["max_queue_delay_microseconds"] == 2000

    result = Bt.compare_batching(
        ep, batch_runs.BatchingSettings(True, 20000, [8], 1), concurrency=8, duration_s=1.5
    )
    off, on = result["off"], result["on"]
    assert off.errors == 0 and on.errors == 0 and off.requests > 0 and on.requests > 0
    assert set(off.batch_histogram) == {1}  # no dynamic batching: one request per execution
    assert on.mean_batch_size > 1.5  # 8 clients, 20 ms of patience: Triton batches them
    assert max(on.batch_histogram) <= 8
    assert result["throughput_ratio"] == pytest.approx(on.throughput_rps / off.throughput_rps)
    assert override.current_config(ep) == original

    # an error in the middle of an experiment: the override was live, and is undone anyway
    seen = {}

    def exploding_bench(*args, **kwargs):
        seen["config"] = override.current_config(ep)
        with pytest.raises(override.BatchingError) as busy:  # one experiment per server at a time
            batch_runs.run_experiment(ep, batch_runs.BatchingSettings())
        seen["busy"] = busy.value.code
        raise RuntimeError("the load generator broke")

    monkeypatch.setattr(batch_runs, "run_bench", exploding_bench)  # the experiment's load runs there
    with pytest.raises(RuntimeError, match="broke"):
        batch_runs.run_experiment(ep, batch_runs.BatchingSettings(True, 100, [2], 2))
    assert seen["config"]["dynamic_batching"]["preferred_batch_size"] == [2]
    assert seen["config"]["instance_group"][0]["count"] == 2
    assert seen["busy"] == "busy"
    assert override.current_config(ep) == original


@pytest.mark.app
def test_batching_lab_page_renders(server, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from triton_kitchen.core import lessons

    conftest.use_remote(monkeypatch, server)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)
    at.query_params["lang"] = "en"
    switch_page(at, "views/lab_batching.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == lessons.t("lab_batching.title", "en")
    assert at.slider(key="batch_c").value == 8 and at.slider(key="batch_c").max == 16
    # a remote server without the repository key: the app says so, keeps working, changes nothing
    at.slider(key="batch_d").set_value(1)
    at.button(key="batch_run").click().run()
    assert not at.exception
    assert not at.error
    assert [w.value for w in at.warning] == [lessons.t("error.batching_no_control_api", "en")]
    assert (
        override.current_config(server.endpoint)["dynamic_batching"]["max_queue_delay_microseconds"] == 2000
    )


def test_batch_histogram_counts_the_measured_window_only(server, monkeypatch):
    """The histogram and the table count the same window: images executed ≈ requests answered (a
    few in flight at each edge), not the warm-up's executions on top."""
    # The warm-up is longer than the window, so counting it would add more than the whole window's
    # requests: the test can fail on a loaded machine too (CI once measured 10 requests/s, where a
    # 1 s warm-up added no more than the slack). The slack is a few requests in flight at each edge
    # plus a tenth of the window, as the statistics are read on timers beside the bench's own clock.
    monkeypatch.setattr(batch_runs, "WARMUP_S", 3.0)
    result = Bt.compare_batching(
        server.endpoint, batch_runs.BatchingSettings(True, 2000, [], 1), concurrency=4, duration_s=2.0
    )
    for r in (result["off"], result["on"]):
        assert r.requests >= 8 and r.errors == 0
        images = sum(size * n for size, n in r.batch_histogram.items())
        warmup = r.throughput_rps * batch_runs.WARMUP_S  # what the warm-up would add to the histogram
        slack = max(2 * r.concurrency + 2, 0.1 * r.requests)
        assert abs(images - r.requests) <= slack < warmup, (images, r.requests, warmup)
    assert set(result["off"].batch_histogram) == {1}


def _result(rps_off: float, rps_on: float) -> dict:
    lat = {"p50": 30.0, "p90": 40.0, "p99": 50.0}
    off = batch_runs.ExperimentResult(batch_runs.BatchingSettings(False), 8, rps_off, lat, 100, 0, {1: 100})
    on = batch_runs.ExperimentResult(
        batch_runs.BatchingSettings(True, 2000, [], 1),
        8,
        rps_on,
        {"p50": 33.0, "p90": 45.0, "p99": None},
        90,
        0,
        {1: 10, 4: 20},
    )
    return {
        "off": off,
        "on": on,
        "throughput_ratio": rps_on / rps_off,
        "p99_ratio": None,
        "concurrency": 8,
        "duration_s": 3.0,
        "protocol": "grpc",
    }


@pytest.mark.app
def test_batching_lab_explains_a_slowdown_in_the_readers_language(embedded):
    import os

    at = page("views/lab_batching.py", state={"batch_result": _result(32.3, 29.0)})
    assert at.multiselect(key="batch_preferred").value == []
    assert at.multiselect(key="batch_preferred").proto.placeholder == tz("lab_batching.preferred_none")
    infos = [i.value for i in at.info]
    assert tz("lab_batching.slower_cpu", ratio=29.0 / 32.3, cores=os.cpu_count() or 1) in infos
    # the histogram's images against the table's requests, warm-up left out
    assert tz(
        "lab_batching.hist_caption",
        c=8,
        s=3.0,
        w=batch_runs.WARMUP_S,
        off_images=100,
        on_images=90,
        off_requests=100,
        on_requests=90,
    ) in [c.value for c in at.caption]
    (table,) = frames(at)
    assert_human_table(table)
    settings = list(table.value[tz("lab_batching.col_setting")])
    assert settings == [
        tz("lab_batching.setting_off", n=1),
        tz("lab_batching.setting_on", delay=2000, preferred=tz("lab_batching.preferred_none_short"), n=1),
    ]
    assert not any("instance" in s or "delay" in s for s in settings)
    # no explanation when batching helped
    at = page("views/lab_batching.py", state={"batch_result": _result(30.0, 60.0)})
    assert not [i for i in at.info if "×" in i.value]


@pytest.mark.app
def test_batching_lab_slowdown_on_a_remote_server(remote):
    at = page("views/lab_batching.py", "en", state={"batch_result": _result(32.3, 29.0)})
    assert lessons.t("lab_batching.slower_remote", "en", ratio=29.0 / 32.3) in [i.value for i in at.info]
