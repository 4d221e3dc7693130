"""Chapter 3's "The Python backend, from the inside" on the page, on the real server: the burst's own run lists the
stub processes that answered it, also when the burst is what loaded the drill's model (it loads on first use, and
again after a restart of the server)."""

from __future__ import annotations

import time

import pytest
from conftest import open_app_page, predict_and_press

from triton_kitchen.core import catalog, kserve, lessons
from triton_kitchen.tools import repository

PAGE = "views/ch3_multi_model.py"
MODEL = catalog.SHAPES_DRILL


def _unload(ep, timeout: float = 20.0) -> None:
    kserve.unload_model(ep, MODEL, headers=ep.headers)
    deadline = time.monotonic() + timeout
    while kserve.model_ready(ep, MODEL) or repository.server_status(ep).state_of(MODEL).state == "UNLOADING":
        assert time.monotonic() < deadline, f"{MODEL} still loaded"
        time.sleep(0.1)


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_stub_table_lists_the_stubs_the_burst_loaded(embedded, lang):
    _unload(embedded.endpoint)
    at = open_app_page(PAGE, lang)
    waiting = lessons.t("py_inside.stubs_on_first_use", lang, model=MODEL)
    assert waiting in [c.value for c in at.caption], "the page should say the model is not loaded yet"
    predict_and_press(at, "ch3_inside", "list", "ch3_inside_run")
    result = at.session_state["ch3_inside_result"]
    assert result.outcome() == "list"
    # the same run: the stub table is drawn after the burst, so it lists the processes that answered it
    assert waiting not in [c.value for c in at.caption]
    instance, pid = lessons.t("py_inside.col.instance", lang), lessons.t("py_inside.col.pid", lang)
    stub_tables = [d.value for d in at.dataframe if instance in d.value.columns]
    assert len(stub_tables) == 1, "one table of stub processes"
    stub_pids = {str(p) for p in stub_tables[0][pid]}
    assert {str(p) for p in result.pids()} <= stub_pids, (result.pids(), stub_pids)
