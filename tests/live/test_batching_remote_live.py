"""The batching lab on a remote server whose repository API is restricted to a key, as the project's own
``serve`` and the GPU compose file start Triton (here: the session's server, which restricts its repository API to
its own key, seen as a remote one): with the key in TRITON_KITCHEN_KEY the lab runs there; without it the lab says
why, and keeps saying it on the next rerun (an expander opened, a slider moved) until a run succeeds."""

from __future__ import annotations

from pathlib import Path

import conftest
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import lessons, override

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _lab(monkeypatch, server, key: str | None) -> AppTest:
    conftest.use_remote(monkeypatch, server)
    monkeypatch.setattr("ui.server.PROBE_TIMEOUT_S", 10.0)
    if key is None:
        monkeypatch.delenv("TRITON_KITCHEN_KEY", raising=False)
    else:
        monkeypatch.setenv("TRITON_KITCHEN_KEY", key)
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["lang"] = "en"
    switch_page(at, "views/lab_batching.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.slider(key="batch_d").set_value(1)
    return at


def test_the_refusal_stays_on_the_page_after_a_rerun(server, monkeypatch):
    at = _lab(monkeypatch, server, None)
    refusal = lessons.t("error.batching_no_control_api", "en")
    at.button(key="batch_run").click().run()
    assert [w.value for w in at.warning] == [refusal]
    assert "TRITON_KITCHEN_KEY" in refusal
    at.slider(key="batch_c").set_value(4).run()  # any rerun: a slider, an expander
    assert not at.exception
    assert [w.value for w in at.warning] == [refusal]


def test_the_lab_runs_on_a_remote_that_holds_the_key(server, monkeypatch):
    at = _lab(monkeypatch, server, server.key)
    assert lessons.t("lab_batching.remote_note", "en") not in [i.value for i in at.info]
    at.slider(key="batch_c").set_value(4)
    at.button(key="batch_run").click().run()
    assert not at.exception and not at.error
    refusal = lessons.t("error.batching_no_control_api", "en")
    assert refusal not in [w.value for w in at.warning]
    ratio = next(m for m in at.metric if m.label == lessons.t("lab_batching.ratio", "en"))
    assert ratio.value.startswith("×")
    # whether the gain held still within the run: a caption when it did, a warning naming its range when not
    stable = lessons.t("lab_batching.stable", "en", n=0, w=0, off=0, on=0).split(":")[0]
    unstable = lessons.t("lab_batching.unstable", "en", n=0, w=0, off=0, on=0, low=0, high=0).split(":")[0]
    said = [c.value for c in at.caption] + [w.value for w in at.warning]
    assert any(s.startswith((stable, unstable)) for s in said), said
    # the lab put the server's own config back
    assert (
        override.current_config(server.endpoint)["dynamic_batching"]["max_queue_delay_microseconds"] == 2000
    )
