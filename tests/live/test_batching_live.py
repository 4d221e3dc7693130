"""The dynamic batching lab: config overrides, batch statistics, the on/off ratio, and the original
config restored afterwards, on error too. One test reloads the shared classifier.

The tests of this topic that need no server, app or browser: tests/unit/test_batching.py."""

from __future__ import annotations

import conftest
import pytest
from conftest import switch_page

from triton_kitchen.core import override
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
