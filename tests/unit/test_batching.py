"""The dynamic batching lab without a server: the config override, a dead server as a connection error and a
failed load, the lab's default (no preferred batch sizes).

The tests that need the server, the app or a browser: tests/live/test_batching_live.py."""

from __future__ import annotations

import pytest

from triton_kitchen.core import override
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.kserve import KServeError
from triton_kitchen.core.server import free_port
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


def test_lab_defaults_to_no_preferred_batch_sizes():
    assert (
        batch_runs.BatchingSettings().preferred_batch_sizes == []
    )  # Triton: start with dynamic_batching { }
