"""The dynamic batching lab: config overrides, batch statistics, the on/off ratio, and the original
config restored afterwards, on error too. One test reloads the shared classifier."""

from __future__ import annotations

import conftest
import pytest
from conftest import switch_page

from triton_kitchen.core import override
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.kserve import KServeError
from triton_kitchen.core.server import free_port
from triton_kitchen.labs import batching as Bt
from triton_kitchen.tools import batch_runs

BASE = {
    "name": "classifier",
    "max_batch_size": 8,
    "dynamic_batching": {"preferred_batch_size": [4, 8], "max_queue_delay_microseconds": 2000},
    "instance_group": [{"name": "classifier_0", "kind": "KIND_CPU", "count": 1, "gpus": []}],
}


def test_config_override():
    on = batch_runs.config_override(BASE, batch_runs.BatchingSettings(True, 500, [8, 2, 2], 3))
    assert on["dynamic_batching"] == {"preferred_batch_size": [2, 8], "max_queue_delay_microseconds": 500}
    assert on["instance_group"] == [{"kind": "KIND_CPU", "gpus": [], "count": 3}]
    assert BASE["instance_group"][0]["count"] == 1  # the base is not modified
    off = batch_runs.config_override(BASE, batch_runs.BatchingSettings(enabled=False))
    assert "dynamic_batching" not in off
    for bad in (
        batch_runs.BatchingSettings(preferred_batch_sizes=[16]),
        batch_runs.BatchingSettings(instance_count=0),
        batch_runs.BatchingSettings(max_queue_delay_us=-1),
    ):
        with pytest.raises(override.BatchingError) as err:
            batch_runs.config_override(BASE, bad)
        assert err.value.code == "bad_settings" and err.value.detail == str(err.value)
        assert isinstance(err.value, KitchenError)
    with pytest.raises(override.BatchingError):
        batch_runs.config_override({**BASE, "max_batch_size": 0}, batch_runs.BatchingSettings())
    assert batch_runs.stats_delta({1: 5, 2: 1}, {1: 9, 2: 1, 4: 3}) == {1: 4, 4: 3}


def test_a_dead_server_is_a_connection_error_and_a_failed_load():
    port = free_port()
    dead = Endpoint(f"127.0.0.1:{port}", f"127.0.0.1:{port}")
    with pytest.raises(KServeError) as info:
        batch_runs.batch_stats(dead)
    assert info.value.code == "connection"
    with pytest.raises(override.BatchingError) as err:
        override.load_model(dead, override.MODEL, dict(BASE))
    assert err.value.code == "load_failed" and "cannot read the loaded config" in err.value.detail


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
