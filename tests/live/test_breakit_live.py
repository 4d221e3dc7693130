"""The break-it lab (triton_kitchen.labs.breakit, views/lab_break.py): each mistake raises the client's or
Triton's real error against the real server, and each fix works, over HTTP and gRPC where both apply.

The tests of this topic that need no server, app or browser: tests/unit/test_breakit.py."""

from __future__ import annotations

import pytest
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.labs import breakit


def test_a_plain_grpc_client_hits_the_4_mib_receive_limit_after_the_server_ran(server):
    result = breakit.run_case(server.endpoint, "grpc_limit")
    (broken,) = result.broken
    assert not broken.ok and broken.code == "RESOURCE_EXHAUSTED" and "4194304" in broken.message
    assert result.facts["server_ran"] >= 1  # Triton took the 4.8 MB request and ran hflip
    assert result.facts["request_bytes"] > 4 * 1024 * 1024 and result.facts["grpc_default_receive"] == 4194304
    assert result.facts["reply_bytes"] > result.facts["grpc_default_receive"]
    assert [(a.kind, a.ok) for a in result.fixed] == [("plain_grpc_option", True), ("tritonclient", True)]
    assert result.facts["tritonclient_limit"] == 2**31 - 1


def test_a_decoupled_model_is_refused_over_http_infer_and_streams_over_grpc_and_sse(server):
    result = breakit.run_case(server.endpoint, "decoupled_http")
    (broken,) = result.broken
    assert not broken.ok and "decoupled transaction policy" in broken.message
    assert [a.kind for a in result.fixed] == ["grpc_stream", "sse"] and all(a.ok for a in result.fixed)
    assert all(a.detail["tokens"] == 5 for a in result.fixed)


def test_the_server_receives_the_nuls_only_from_an_object_array(server):
    result = breakit.run_case(server.endpoint, "bytes_nul")
    as_str, as_bytes = result.broken
    assert not as_str.ok and "expected BYTES" in as_str.message
    assert not as_bytes.ok and as_bytes.detail["received"] == repr(b"Triton")  # 6 bytes, silently
    (fixed,) = result.fixed
    assert fixed.ok and fixed.detail["received"] == repr(breakit.NUL_TEXT)


def test_a_model_or_version_that_is_not_loaded_over_both_protocols(server):
    result = breakit.run_case(server.endpoint, "not_loaded")
    assert [a.kind for a in result.broken] == ["http_name", "grpc_name", "http_version", "grpc_version"]
    assert [a.code for a in result.broken] == ["404", "NOT_FOUND", "404", "NOT_FOUND"]
    assert all("unknown model" in a.message for a in result.broken)
    assert "'classifier_v2' is not found" in result.broken[0].message
    assert f"version {result.facts['missing_version']} is not found" in result.broken[2].message
    assert all(a.ok for a in result.fixed) and "classifier v1" in result.facts["ready"]
    # a server that keeps its repository API to itself (no key): still the errors, and the refusal said
    closed = breakit.run_case(Endpoint(http_url=server.http_url, grpc_url=server.grpc_url), "not_loaded")
    assert closed.facts["index_refused"] and all(a.ok for a in closed.fixed)
    assert kserve.model_ready(server.endpoint, "classifier")


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_lab_page_shows_the_real_errors_beside_the_fix(embedded, lang):
    at = AppTest.from_file("app.py", default_timeout=90)
    at.query_params["lang"] = lang
    switch_page(at, "views/lab_break.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.button(key="break_not_loaded").click().run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.main.error]
    assert len(errors) == 4 and all("unknown model" in e for e in errors)
    assert len(at.main.success) == 2 and any("/v2/repository/index" in c.value for c in at.code)
