"""Three protocols against the real embedded server: same result, payload vs wire bytes, streaming.

The tests of this topic that need no server, app or browser: tests/unit/test_protocols.py."""

from __future__ import annotations

import json

import conftest
import numpy as np
import pytest
from _shared.pages import APP, TIMEOUT, assert_human_table, frames, page, tz
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.tools import bench
from triton_kitchen.tools import protocols as P


@pytest.fixture(scope="module")
def pipeline(server):
    """ensemble_pipeline called the three ways with the preprocessed cat photo (one call each)."""
    info, arrays = P.sample_inputs(server.endpoint, "ensemble_pipeline")
    return P.compare_protocols(server.endpoint, "ensemble_pipeline", arrays, calls=1)


def test_same_input_same_result_over_three_protocols(pipeline):
    assert [r.protocol for r in pipeline.rows] == list(P.PROTOCOLS)
    assert pipeline.same_result, pipeline.disagreements
    probs = pipeline.row("grpc").outputs["output_label"]
    assert probs.shape == (1, 1000)
    assert abs(float(probs.sum()) - 1.0) < 1e-3
    # and the check can fail: different outputs do not agree
    other = {"output_label": np.roll(probs, 1)}
    assert not P.outputs_agree(pipeline.row("grpc").outputs, other)


def test_json_is_bigger_than_binary_for_fp32_tensors(pipeline):
    j, b, g = pipeline.row("http-json"), pipeline.row("http-binary"), pipeline.row("grpc")
    raw = 3 * 224 * 224 * 4
    assert b.request_bytes > raw and g.request_bytes > raw  # the tensor plus a small header
    assert j.request_bytes > 1.5 * b.request_bytes  # float text is longer than 4 bytes a number
    assert pipeline.json_inflation == pytest.approx(j.request_bytes / b.request_bytes)
    assert pipeline.json_response_inflation > 1.5  # 1000 probabilities as text, too
    assert P.json_inflation({"x": np.random.default_rng(0).standard_normal((1, 1000)).astype(np.float32)}) > 2


def test_wire_bytes_exceed_payload_bytes(pipeline):
    for r in pipeline.rows:
        assert r.wire_sent_per_call > r.request_bytes, r.protocol
        assert r.wire_received_per_call > r.response_bytes, r.protocol
        assert r.wire_overhead > 1.0
    g = pipeline.row("grpc")
    # the first gRPC call also carries the HTTP/2 preface and SETTINGS frames
    assert g.wire_first_call_sent > g.wire_sent_per_call


def test_jpeg_vs_raw_tensor(server, sample_jpegs):
    computed = P.tensor_vs_jpeg(sample_jpegs["chelsea"])
    assert computed["tensor_bytes"] == 602112
    assert computed["ratio"] > 5
    arrays = {"image_bytes": np.array([[sample_jpegs["chelsea"]]], dtype=object)}
    c = P.compare_protocols(server.endpoint, "image_classifier", arrays, calls=1)
    assert c.same_result, c.disagreements
    labels = [v.decode() for v in c.row("grpc").outputs["top5_labels"][0]]
    assert "cat" in labels[0]
    # a JPEG is not UTF-8: JSON cannot carry it, so http-json sends that one input binary and says so
    assert c.row("http-json").binary_inputs == ["image_bytes"]
    assert c.row("http-binary").request_bytes < computed["tensor_bytes"] / 5


def test_gzip_shrinks_http_bodies_and_keeps_the_result(server):
    _, arrays = P.sample_inputs(server.endpoint, "ensemble_pipeline")
    plain = P.measure_protocol(server.endpoint, "http-binary", "ensemble_pipeline", arrays, calls=1)
    gz = P.measure_protocol(
        server.endpoint, "http-binary", "ensemble_pipeline", arrays, calls=1, compression="gzip"
    )
    assert gz.request_bytes < plain.request_bytes
    assert gz.wire_sent_per_call < plain.wire_sent_per_call
    assert P.outputs_agree(plain.outputs, gz.outputs)


def test_inputs_synthesized_from_metadata_for_any_model(server):
    info = P.model_info(server.endpoint, "postprocess", "grpc")
    assert info.max_batch_size == 8 and [t.name for t in info.inputs] == ["logits"]
    arrays = P.synthesize_inputs(info)
    assert arrays["logits"].shape == (1, 1000) and arrays["logits"].dtype == np.float32
    results = [P.call_once(server.endpoint, p, "postprocess", arrays) for p in P.PROTOCOLS]
    assert all(P.outputs_agree(results[0].outputs, r.outputs) for r in results[1:])
    assert set(results[0].outputs) == {"probabilities", "top5_labels", "top5_scores"}
    streamer = P.model_info(server.endpoint, "streamer")
    assert streamer.decoupled
    assert set(P.synthesize_inputs(streamer)) == {"text"}  # the optional delay_ms is left out
    assert set(P.synthesize_inputs(streamer, include_optional=True)) == {"text", "delay_ms"}
    made_up = P.ModelInfo(
        "m", [P.TensorInfo("ids", "INT64", [-1, -1]), P.TensorInfo("mask", "BOOL", [4])], []
    )
    arrays = P.synthesize_inputs(made_up)
    assert arrays["ids"].shape == (1, 1) and arrays["ids"].dtype == np.int64
    assert arrays["mask"].dtype == bool


def test_unknown_model_is_a_server_error_on_every_protocol(server):
    for p in P.PROTOCOLS:
        with pytest.raises(P.ProtocolError) as err:
            P.call_once(server.endpoint, p, "no_such_model", {"x": np.zeros((1, 2), np.float32)})
        assert err.value.code == "server", p


@pytest.mark.timing
def test_streaming_over_grpc_and_sse(server):
    text = "one two three four"
    runs = P.compare_streaming(server.endpoint, text, delay_ms=20, timeout_s=10)
    assert [r.protocol for r in runs] == ["grpc-stream", "http-sse"]
    for r in runs:
        assert r.error is None, r.error
        assert [tok.strip() for tok in r.tokens] == text.split()
        assert r.ttft_ms is not None and r.ttft_ms < 1000
        assert len(r.inter_token_ms) == 3
        # the model waits 20 ms between tokens: they arrive spread out, not at once (one gap alone can be short:
        # a token held up on a loaded machine arrives just before the next)
        assert sum(r.inter_token_ms) > 30 and max(r.inter_token_ms) > 10
        assert r.to_dict()["tokens"] == 4


def test_model_info_over_http_raises_protocol_errors(server):
    with pytest.raises(P.ProtocolError) as err:
        P.model_info(server.endpoint, "no_such_model", "http-binary")
    assert err.value.code == "server"
    from triton_kitchen.core.endpoint import Endpoint
    from triton_kitchen.core.server import free_port

    closed = f"127.0.0.1:{free_port()}"
    with pytest.raises(P.ProtocolError) as err:
        P.model_info(Endpoint(closed, closed), "classifier", "http-binary", timeout=2)
    assert err.value.code == "connection"


def _lab(server, monkeypatch, page: str, lang: str):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    conftest.use_remote(monkeypatch, server)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)
    at.query_params["lang"] = lang
    switch_page(at, page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_protocol_lab_page(server, monkeypatch, lang):
    from triton_kitchen.core import lessons

    at = _lab(server, monkeypatch, "views/lab_protocols.py", lang)
    assert at.title[0].value == lessons.t("lab_protocols.title", lang)
    at.button(key="proto_bytes_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [s.value for s in at.main.success] == [
        lessons.t("lab_protocols.same_result", lang, model="ensemble_pipeline")
    ]
    assert at.get("plotly_chart") and at.dataframe
    side = at.dataframe[0].value  # the protocols across, the measures down: no column runs off the side
    assert list(side.columns)[0] == lessons.t("lab_protocols.col_measure", lang) and len(side.columns) == 4
    at.button(key="proto_stream_run").click().run()
    assert not at.exception and not at.error
    assert len(at.metric) >= 2


@pytest.mark.app
def test_load_tab_times_without_the_proxy_and_counts_bytes_apart(server, monkeypatch):
    from triton_kitchen.core import lessons

    at = _lab(server, monkeypatch, "views/lab_protocols.py", "en")
    at.slider(key="proto_load_d").set_value(2)  # a request or more on two loaded cores
    at.slider(key="proto_load_c").set_value(1)
    at.button(key="proto_load_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    results = at.session_state["proto_load"]
    assert [r.protocol for r in results] == list(P.PROTOCOLS)
    assert all(r.requests > 0 and r.wire_bytes_sent is None for r in results)  # no proxy in the timed path
    wire = at.session_state["proto_load_wire"]
    assert set(wire) == set(P.PROTOCOLS)
    for p, (sent, received) in wire.items():
        assert sent > 3 * 224 * 224 * 4 and received > 1000 * 4, p  # ensemble_pipeline: the tensors and more
    assert lessons.t("lab_protocols.wire_pass_note", "en", calls=3) in [c.value for c in at.caption]
    table = at.dataframe[0].value
    assert lessons.t("lab_protocols.col_wire_per_call", "en") in table.columns and len(table.columns) <= 8
    # why: Triton's own split per protocol, per step of the ensemble, and a Little's law line for each
    captions = [c.value for c in at.caption]
    assert sum(c.startswith("Per step (Triton") and "classifier" in c for c in captions) == len(P.PROTOCOLS)
    assert sum("Little's law" in c for c in captions) == len(P.PROTOCOLS)


@pytest.mark.app
@pytest.mark.parametrize(
    ("page", "button", "runs_key", "lang"),
    [
        ("views/ch5_grpc.py", "ch5_stream", "ch5_stream_run", "zh"),
        ("views/ch6_choosing_protocol.py", "ch6_run", "ch6_runs", "en"),
    ],
)
def test_chapter_stream_demos_draw_token_arrivals(server, monkeypatch, page, button, runs_key, lang):
    """Predict, stream, see: tokens with their arrival times, and the prediction beside what happened."""
    from triton_kitchen.core import lessons
    from triton_kitchen.tools.protocols.streaming import first_token_outcome

    at = _lab(server, monkeypatch, page, lang)
    key = "tk_predict_ch5_arrive" if button == "ch5_stream" else "tk_predict_ch6_first"
    at.radio(key=key).set_value("end" if button == "ch5_stream" else "grpc")
    at.button(key=button).click().run()
    assert not at.exception and not at.error, [e.value for e in at.exception]
    runs = at.session_state[runs_key]
    for run in runs if isinstance(runs, list) else [runs]:
        assert run.error is None and run.tokens and len(run.arrivals_ms) == len(run.tokens)
    assert at.get("plotly_chart")
    if button == "ch5_stream":  # 60 ms between tokens: the first arrives long before the stream ends
        outcome = runs.arrival_outcome()
        assert outcome == "early"
        label = lessons.t(f"ch5.arrive_{outcome}", lang)
    else:
        outcome = first_token_outcome(*runs)
        assert outcome in ("sse", "same", "grpc")
        label = lessons.t(f"ch6.first_{outcome}", lang)
    assert label in "\n".join(m.value for m in at.markdown)
    assert lessons.t("predict.happened", lang) in "\n".join(m.value for m in at.markdown)


def _bench(protocol: str, rps: float, p50: float | None) -> bench.BenchResult:
    lat = {"p50": p50, "p90": p50, "p99": p50}
    return bench.BenchResult(protocol, "image_classifier", 4, 57, 0, rps, lat, 1_452_444, 4_000, None, None)


@pytest.mark.app
def test_protocol_lab_tables_are_for_people(remote):
    results = [
        _bench("http-json", 18.9989, 59.7),
        _bench("http-binary", 34.6543, 34.97),
        _bench("grpc", 0.0, None),
    ]
    at = page("views/lab_protocols.py", state={"proto_load": results, "proto_sweep": results})
    tables = frames(at)
    assert len(tables) == 2
    for table in tables:
        assert_human_table(table)
        assert list(table.value[tz("lab_protocols.col_protocol")]) == ["HTTP-JSON", "HTTP-二进制", "gRPC"]
        assert len(table.value.columns) <= 8  # fits the page: the rest is in the downloads
    fmt = tables[0].config
    assert any("%,.1f" in json.dumps(v) for v in fmt.values())  # one number of decimals per column


@pytest.mark.app
def test_protocol_lab_progress_bars_say_their_protocol(remote):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "zh"
    switch_page(at, "views/lab_protocols.py")
    at.run()
    at.slider(key="proto_load_d").set_value(1)
    at.slider(key="proto_load_c").set_value(1)
    at.button(key="proto_load_run").click().run()
    assert not at.exception
    bars = [p.proto.text for p in at.get("progress")]
    assert len(bars) == 3
    for bar, name in zip(bars, ["HTTP-JSON", "HTTP-二进制", "gRPC"], strict=True):
        assert bar.startswith(name + " · "), bars
    assert_human_table(frames(at)[0])


@pytest.mark.app
def test_protocol_lab_draws_only_its_open_tab(remote):
    """A fresh protocol lab draws one tab's widgets, not all five's; the tab the reader left open is the one drawn.
    Fails if the tabs go back to plain ``st.tabs``, which draw every tab's widgets on the first paint."""
    from ui import boxes

    runs = {"proto_bytes_run", "proto_load_run", "proto_sweep_run", "proto_check_run", "proto_stream_run"}
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    switch_page(at, "views/lab_protocols.py", open_boxes=False).run()
    assert not at.exception
    keys = {b.key for b in at.button}
    assert keys & runs == {"proto_bytes_run"} and "proto_stop" in keys, keys
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    at.session_state[boxes.OPEN_TABS] = {"proto_tabs": "load"}
    switch_page(at, "views/lab_protocols.py", open_boxes=False).run()
    assert {b.key for b in at.button} & runs == {"proto_load_run"}
    assert at.slider(key="proto_load_c").value == 4
