"""Models loaded on first use on the real server (started as the app starts it: tests/conftest.py): a drill's model
unloaded is loaded once for several callers at once; a client without the key and a model the repository lacks get
codes of their own."""

from __future__ import annotations

import threading
import time

import pytest

from triton_kitchen.core import catalog, kserve, on_demand
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools import repository

MODEL = catalog.SHAPES_BUCKET_LONG  # a drill's model; the shapes drill loads it again itself when it runs


def _wait_unloaded(ep: Endpoint, model: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while kserve.model_ready(ep, model) or repository.server_status(ep).state_of(model).state == "UNLOADING":
        assert time.monotonic() < deadline, f"{model} still loaded"
        time.sleep(0.1)


def test_the_server_starts_without_the_drills_models(server):
    assert server.load_models == on_demand.loaded_at_start()
    assert not set(catalog.LOADED_ON_FIRST_USE) & set(server.load_models)


def test_an_unloaded_drill_model_loads_once_for_callers_at_once(server):
    ep = server.endpoint
    on_demand.ensure_loaded(ep, MODEL)
    kserve.unload_model(ep, MODEL)
    _wait_unloaded(ep, MODEL)
    state = repository.server_status(ep).state_of(MODEL)
    assert state.on_first_use and not state.ready, state  # the model lists show it as waiting, not as a fault
    start = time.monotonic()
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda: results.append(on_demand.ensure_loaded(ep, MODEL))) for _ in range(4)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert sorted(results) == [False, False, False, True]
    assert kserve.model_ready(ep, MODEL)
    assert time.monotonic() - start < 20


def test_a_client_without_the_key_gets_no_control_api(server):
    ep = server.endpoint
    kserve.unload_model(ep, catalog.WARMUP_DRILL)
    _wait_unloaded(ep, catalog.WARMUP_DRILL)
    try:
        with pytest.raises(on_demand.OnDemandError) as caught:
            on_demand.ensure_loaded(Endpoint(server.http_url, server.grpc_url), catalog.WARMUP_DRILL)
        assert caught.value.code == "no_control_api", caught.value.detail
    finally:
        on_demand.ensure_loaded(ep, catalog.WARMUP_DRILL)


def test_a_model_the_repository_lacks_is_not_in_repository(server):
    with pytest.raises(on_demand.OnDemandError) as caught:
        on_demand.ensure_loaded(server.endpoint, "no_such_model")
    assert caught.value.code == "not_in_repository", caught.value.detail


@pytest.mark.app
def test_the_sidebar_shows_a_drill_model_waiting_as_no_fault(embedded):
    from _shared.pages import page, tz

    ep = embedded.endpoint
    kserve.unload_model(ep, catalog.SHAPES_BUCKET_SHORT)
    _wait_unloaded(ep, catalog.SHAPES_BUCKET_SHORT)
    try:
        waiting = sum(1 for m in repository.server_status(ep).models if m.on_first_use)
        at = page(None, state={"tk_open": {"tk_models_open": True}})
        assert not at.sidebar.warning, [w.value for w in at.sidebar.warning]  # no "models not ready"
        assert tz("sidebar.models_on_first_use", n=waiting) in [c.value for c in at.sidebar.caption]
        names = [str(v) for df in at.sidebar.dataframe for v in df.value.iloc[:, 0]]
        assert f"💤 {catalog.SHAPES_BUCKET_SHORT} · {tz('sidebar.state_on_first_use')}" in names, names
        assert not any(n.startswith("⛔") for n in names), names
    finally:
        on_demand.ensure_loaded(ep, catalog.SHAPES_BUCKET_SHORT)
