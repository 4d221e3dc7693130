"""Lessons as tests, the part that asks the real server: the conventions a lesson follows and what is checked
are in tests/unit/test_lesson_content.py's docstring, which holds the tests that need no server, app or browser."""

from __future__ import annotations

import json
import re
import urllib.request

import numpy as np
import pytest
from _shared.lesson_content import fences, lesson_body, lesson_prose
from conftest import settled

from triton_kitchen.core import lessons as L
from triton_kitchen.core.samples import sample_jpeg

# --- claims the real server settles ----------------------------------------------------------


def _http(
    server, path: str, data: bytes | None = None, headers: dict | None = None, method: str | None = None
):
    req = urllib.request.Request(
        f"http://{server.http_url}{path}", data=data, headers=headers or {}, method=method
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers.items()), exc.read()


def test_server_version_the_lessons_name(server):
    status, _, body = _http(server, "/v2")
    version = json.loads(body)["version"]
    assert status == 200 and version == "2.51.0"
    assert f"`{version}`" in lesson_body(4, "en") and f"`{version}`" in lesson_body(4, "zh")
    short = ".".join(version.split(".")[:2])
    assert f"Triton {short}" in lesson_prose(2, "en") and f"Triton {short}" in lesson_prose(2, "zh")


@pytest.mark.parametrize("lang", L.LANGS)
def test_sse_example_is_what_the_server_sends(server, lang):
    (code,) = [
        c
        for language, _, c, _ in fences(lesson_body(6, lang))
        if language == "bash" and "generate_stream" in c
    ]
    payload = re.search(r"-d '(\{.*?\})'", code).group(1)
    shown = [json.loads(line[len("data: ") :]) for line in code.splitlines() if line.startswith("data: ")]
    status, headers, body = _http(
        server, "/v2/models/streamer/generate_stream", payload.encode(), {"Content-Type": "application/json"}
    )
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    sent = [json.loads(line[5:]) for line in body.decode().splitlines() if line.startswith("data:")]
    assert sent == shown


def test_a_key_that_names_no_input_is_not_rejected(server):
    """ch6: the generate extension passes unknown keys on as parameters instead of refusing the request."""
    body = json.dumps({"text": "hello kitchen", "colour": "red"}).encode()
    status, _, answer = _http(
        server, "/v2/models/streamer/generate_stream", body, {"Content-Type": "application/json"}
    )
    assert status == 200 and b'"token":"kitchen"' in answer


def test_triton_sends_no_cors_headers(server):
    """ch6/ch8: a page from another origin gets no permission from Triton, so it needs a same-origin gateway."""
    origin = {"Origin": "https://app.example"}
    _, headers, _ = _http(server, "/v2/health/ready", headers=origin)
    preflight = {
        **origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    _, pre_headers, _ = _http(
        server, "/v2/models/streamer/generate_stream", headers=preflight, method="OPTIONS"
    )
    for h in (headers, pre_headers):
        assert not [k for k in h if k.lower().startswith("access-control-")], h


def _executions(server, model: str) -> int:
    _, _, body = _http(server, f"/v2/models/{model}/stats")
    return sum(int(s["execution_count"]) for s in json.loads(body)["model_stats"])


def _infer_photo(server, model: str, outputs: list[str]) -> None:
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(server.http_url)
    try:
        inp = httpclient.InferInput("image_bytes", [1, 1], "BYTES")
        inp.set_data_from_numpy(np.array([[sample_jpeg("coffee")]], dtype=object))
        client.infer(model, [inp], outputs=[httpclient.InferRequestedOutput(o) for o in outputs])
    finally:
        client.close()


def test_steps_feeding_only_unrequested_outputs_are_pruned(server):
    """ch2 (pruning at request time): ask cascade_ensemble for stage_used alone and its postprocess step is skipped."""
    before = {m: _executions(server, m) for m in ("postprocess", "classifier", "classifier_coarse")}
    _infer_photo(server, "cascade_ensemble", ["stage_used"])
    after = settled(  # Triton counts an execution a moment after it answers, on a loaded machine
        lambda: {m: _executions(server, m) for m in before},
        lambda now: (
            now["classifier"] > before["classifier"]
            and now["classifier_coarse"] > before["classifier_coarse"]
        ),
    )
    assert after["postprocess"] == before["postprocess"]
    assert (
        after["classifier"] == before["classifier"] + 1
        and after["classifier_coarse"] > before["classifier_coarse"]
    )
    _infer_photo(server, "cascade_ensemble", ["stage_used", "top5_labels"])
    done = settled(lambda: _executions(server, "postprocess"), lambda n: n > after["postprocess"])
    assert done == after["postprocess"] + 1


def test_errors_are_the_same_over_both_protocols_and_the_output_shape(server):
    """ch7: the server checks names, data types and shapes at run time, with the same words for HTTP and
    gRPC; and (ch5, ch7) the answer is FP32 (1, 1000) probabilities that sum to about 1."""
    from triton_kitchen.labs.demo import run_tutorial

    for mistake in ("tensor_name", "dtype", "shape"):
        http, grpc = (run_tutorial(server.endpoint, p, mistake=mistake) for p in ("http", "grpc"))
        assert not http.ok and not grpc.ok, mistake
        assert http.error == grpc.error, (mistake, http.error, grpc.error)
    ok = run_tutorial(server.endpoint, "grpc")
    assert ok.ok and ok.output_shape == [1, 1000] and abs(ok.prob_sum - 1) < 0.01
    for lang in L.LANGS:
        assert "(1, 1000)" in lesson_body(5, lang) and "(1, 1000)" in lesson_body(7, lang)
