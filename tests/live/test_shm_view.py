"""Shared memory in the request viewers and the protocol lab: one real request through a system
shared-memory region shows what crossed the socket (the region's name and offsets, no tensor), the server's own
list of regions while it ran, and nothing left registered afterwards; the protocol lab offers and runs the
shared-memory protocols on the embedded server."""

from __future__ import annotations

import pytest
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import kserve, lessons
from triton_kitchen.labs import requests_view as rv
from triton_kitchen.tools.protocols.shm import leftover_regions


@pytest.mark.parametrize("protocol", ["http-shm", "grpc-shm"])
@pytest.mark.parametrize("model", ["ensemble_pipeline", "image_classifier"])
def test_what_crosses_the_socket_names_the_region_not_the_tensor(server, sample_jpegs, model, protocol):
    view = rv.shm_request(server.endpoint, model, sample_jpegs["chelsea"], protocol)
    assert view.region in view.text and "shared_memory_region" in view.text
    assert "raw_input_contents" not in view.text and '"data"' not in view.text  # no tensor in the message
    inputs = rv.request_inputs(model, sample_jpegs["chelsea"])
    plain = rv.grpc_request(model, inputs, rv.request_outputs(model)).size
    assert view.size < 1000 < plain and view.tensor_bytes >= sum(t.raw_bytes for t in inputs)
    assert [r["offset"] for r in view.inputs] == [0] and view.outputs[0]["offset"] == view.inputs[0][
        "byte_size"
    ]
    assert set(view.answer) == set(rv.request_outputs(model))
    assert [r["name"] for r in view.server_regions] == [view.region] and view.left_after == []
    assert not any(r["name"] == view.region for r in kserve.system_shm_status(server.endpoint))
    assert view.region not in leftover_regions()


@pytest.mark.app
def test_chapter_5_shows_the_shared_memory_request(embedded):
    at = AppTest.from_file("app.py", default_timeout=90)
    at.query_params["lang"] = "en"
    switch_page(at, "views/ch5_grpc.py").run()
    at.button(key="ch5_shm").click().run()
    assert not at.exception, [e.value for e in at.exception]
    view = at.session_state["ch5_shm_view"]
    assert any(view.region in c.value and "shared_memory_offset" in c.value for c in at.code)
    assert any(m.label == lessons.t("shm_view.socket_bytes", "en") for m in at.metric)


@pytest.mark.app
def test_the_protocol_lab_runs_the_shared_memory_protocols(embedded):
    at = AppTest.from_file("app.py", default_timeout=120)
    at.query_params["lang"] = "zh"
    switch_page(at, "views/lab_protocols.py").run()
    choice = at.multiselect(key="proto_load_protocols")
    offered = {lessons.t(f"protocol.{p}", "zh") for p in ("http-shm", "grpc-shm")}  # options as labelled
    assert offered <= set(choice.options) and "grpc-shm" not in choice.value
    choice.set_value(["grpc", "grpc-shm"])
    at.slider(key="proto_load_d").set_value(2)  # a request or more on two loaded cores
    at.slider(key="proto_load_c").set_value(1)
    at.button(key="proto_load_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    grpc, shm = at.session_state["proto_load"]
    assert shm.protocol == "grpc-shm" and shm.requests > 0 and shm.errors == 0
    assert shm.shm_bytes / shm.requests > 3 * 224 * 224 * 4  # the tensors went through memory
    table = at.dataframe[0].value
    column = lessons.t("lab_protocols.col_shm_per_call", "zh")
    assert column in table.columns and table[column].iloc[1] > 600_000
    assert not leftover_regions()


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_chapter_6_measures_the_fastest_window(embedded, lang):
    """Predict, then measure: the same request over gRPC with its tensor on the socket and in shared memory,
    interleaved; the request on the socket shrinks to its message, and nothing stays registered."""
    at = AppTest.from_file("app.py", default_timeout=120)
    at.query_params["lang"] = lang
    switch_page(at, "views/ch6_choosing_protocol.py").run()
    at.radio(key="tk_predict_ch6_shm").set_value("shm_faster")
    at.button(key="ch6_shm_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.exception]
    result = at.session_state["ch6_shm_result"]
    assert len(result.socket_ms) == len(result.shm_ms) == 15
    assert result.shm_request_bytes < 1_000 < 602_112 < result.socket_request_bytes
    assert result.shm_bytes == 602_112 + 4_000  # the input and the output went through the region
    assert result.outcome() in ("shm_faster", "similar", "shm_slower")
    shown = "\n".join(m.value for m in at.markdown)
    assert lessons.t(f"ch6.shm_{result.outcome()}", lang) in shown
    assert kserve.system_shm_status(embedded.endpoint) == [] and not leftover_regions()
