"""Models loaded on first use (core.on_demand), without a server: which models the app's server starts with, the
state the model lists show, one load for many callers, and Triton's refusals as codes. On the real server:
tests/live/test_on_demand_live.py."""

from __future__ import annotations

import threading
import time

import pytest
from _shared.repository import EXPECTED, LOADED_ON_FIRST_USE

from triton_kitchen.core import catalog, kserve, on_demand
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools.repository import ModelState

EP = Endpoint("127.0.0.1:1", "127.0.0.1:2", embedded=True, headers={"triton-kitchen-key": "k"})


def test_the_app_starts_every_model_but_the_drills():
    assert set(catalog.LOADED_ON_FIRST_USE) == LOADED_ON_FIRST_USE
    start = on_demand.loaded_at_start()
    assert not set(start) & LOADED_ON_FIRST_USE
    assert set(start) | LOADED_ON_FIRST_USE == set(catalog.model_names())
    assert EXPECTED - LOADED_ON_FIRST_USE <= set(start)
    assert {catalog.TINY_LM, catalog.TINY_LM_IFB} <= set(
        start
    )  # chapter 11's models stay loaded from the start


def test_a_drill_model_not_loaded_yet_is_no_fault():
    assert ModelState("shapes_drill").on_first_use  # never loaded: Triton's index gives no state
    assert ModelState("shapes_drill", "1", "UNAVAILABLE", "unloaded").on_first_use
    assert ModelState("shapes_drill", state="UNAVAILABLE").on_first_use  # from readiness alone (index closed)
    assert not ModelState("shapes_drill", "1", "UNAVAILABLE", "failed to load: boom").on_first_use
    assert not ModelState("shapes_drill", "1", "READY").on_first_use
    assert not ModelState("classifier", "1", "UNAVAILABLE", "unloaded").on_first_use  # loaded at start


class FakeServer:
    """Triton's answers to readiness and load: a load takes ``load_s``; ``refuse`` makes it fail."""

    def __init__(
        self, load_s: float = 0.2, refuse: kserve.KServeError | None = None, index=("shapes_drill",)
    ):
        self.ready, self.loads, self.load_s, self.refuse, self.index = set(), [], load_s, refuse, index

    def install(self, monkeypatch):
        monkeypatch.setattr(kserve, "model_ready", lambda ep, model, timeout=1.0: model in self.ready)
        monkeypatch.setattr(kserve, "load_model", self.load)
        monkeypatch.setattr(kserve, "repository_index", lambda ep, *a, **k: [{"name": n} for n in self.index])
        return self

    def load(self, ep, model, config=None, files=None, headers=None, timeout=60.0):
        assert ep.headers == EP.headers  # the endpoint's key unlocks the repository API
        self.loads.append(model)
        if self.refuse is not None:
            raise self.refuse
        time.sleep(self.load_s)
        self.ready.add(model)


def test_callers_at_once_share_one_load(monkeypatch):
    fake = FakeServer().install(monkeypatch)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(on_demand.ensure_loaded(EP, "shapes_drill")))
        for _ in range(6)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    assert fake.loads == ["shapes_drill"]
    assert sorted(results) == [False] * 5 + [True]
    assert on_demand.ensure_loaded(EP, "shapes_drill") is False  # ready: nothing asked of Triton
    assert fake.loads == ["shapes_drill"]


@pytest.mark.parametrize(
    ("refusal", "index", "code"),
    [
        (
            kserve.KServeError("no_control_api", "HTTP 403: This API is restricted", 403),
            ("x",),
            "no_control_api",
        ),
        (
            kserve.KServeError("http", "HTTP 500: failed to poll from model repository", 500),
            (),
            "not_in_repository",
        ),
        (kserve.KServeError("http", "HTTP 500: initialize() raised", 500), ("x",), "load_failed"),
        (kserve.KServeError("timeout", "timed out after 60 s"), ("x",), "timeout"),
    ],
)
def test_a_refused_load_is_a_code_of_its_own(monkeypatch, refusal, index, code):
    FakeServer(refuse=refusal, index=tuple(index)).install(monkeypatch)
    with pytest.raises(on_demand.OnDemandError) as caught:
        on_demand.ensure_loaded(EP, "x")
    assert caught.value.code == code and "x: " in caught.value.detail
    assert caught.value.source == "on_demand"
