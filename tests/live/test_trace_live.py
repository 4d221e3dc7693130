"""trace.py on the recorded real traces and on live ones from the embedded server.

The tests of this topic that need no server, app or browser: tests/unit/test_trace.py."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from _shared.trace import check_tree

from triton_kitchen.core import clients
from triton_kitchen.core.ensemble import build_dag
from triton_kitchen.core.server import DEFAULT_REPOSITORY
from triton_kitchen.tools import trace
from triton_kitchen.tools.flow import step_models


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_live_trace_of_one_request(server, sample_jpegs, protocol):
    ep = server.endpoint
    lib = httpclient if protocol == "http" else grpcclient
    tensor = lib.InferInput("image_bytes", [1, 1], "BYTES")
    tensor.set_data_from_numpy(np.array([[sample_jpegs["coffee"]]], dtype=object))
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(clients.http(ep)) if protocol == "http" else clients.grpc_client(ep)
        result, tl = trace.capture(ep, "image_classifier", lambda: client.infer("image_classifier", [tensor]))
    assert result.as_numpy("top5_labels") is not None
    assert tl.source == "trace" and tl.protocol == protocol
    check_tree(tl, ["preprocess", "classifier", "postprocess"])
    # same clock: the client's send precedes Triton's REQUEST_START, which precedes its response
    assert (
        tl.client_start_ns
        <= tl.root.start_ns
        <= tl.root.timestamps[trace.INFER_RESPONSE_COMPLETE]
        <= tl.client_end_ns
    )
    kinds = {p.kind for p in tl.network_phases()}
    assert {"client_send", "client_receive"} <= kinds
    assert ("http_recv" in kinds) == (protocol == "http")
    # tracing is switched off again for the model
    assert trace.trace_settings(ep, "image_classifier")["trace_level"] == ["OFF"]


def test_a_capture_puts_back_the_trace_settings_it_found(server, sample_jpegs):
    """Someone traces a model on purpose (every 1000th request): a capture leaves it tracing, as it was."""
    ep = server.endpoint
    tensor = grpcclient.InferInput("image_bytes", [1, 1], "BYTES")
    tensor.set_data_from_numpy(np.array([[sample_jpegs["coffee"]]], dtype=object))
    kept = {"trace_level": ["TIMESTAMPS"], "trace_rate": "1000", "log_frequency": "0", "trace_count": "-1"}
    from triton_kitchen.core import kserve

    kserve.update_trace_settings(ep, kept, "image_classifier")
    try:
        trace.capture(
            ep, "image_classifier", lambda: clients.grpc_client(ep).infer("image_classifier", [tensor])
        )
        after = trace.trace_settings(ep, "image_classifier")
        assert {k: after[k] for k in kept} == kept
    finally:
        kserve.update_trace_settings(ep, {"trace_level": ["OFF"]}, "image_classifier")


def test_statistics_fallback_labels_itself(server, sample_jpegs):
    ep = server.endpoint
    client, lib = clients.grpc_client(ep), grpcclient
    tensor = lib.InferInput("image_bytes", [1, 1], "BYTES")
    tensor.set_data_from_numpy(np.array([[sample_jpegs["camera"]]], dtype=object))
    models, preds = step_models(build_dag("image_classifier", DEFAULT_REPOSITORY, validate=False))
    before = trace.model_statistics(ep, models)
    client.infer("image_classifier", [tensor])
    after = trace.statistics_after(ep, models, before)
    assert all(after[m]["count"] - before[m]["count"] >= 1 for m in models)
    tl = trace.statistics_timeline("image_classifier", models, preds, before, after)
    assert tl.source == "statistics" and "laid out" in tl.note
    steps = tl.steps
    assert [s.model for s in steps] == models
    for a, b in zip(steps, steps[1:], strict=False):
        assert b.start_ns == a.end_ns  # a chain: each step laid out after its predecessor
    assert steps[1].timestamps[trace.COMPUTE_END] > steps[1].timestamps[trace.COMPUTE_START]


def test_model_statistics_reads_several_models_at_once_and_refuses_an_unknown_one(server):
    """Several models come from one read and agree with the per-model reads; a model Triton does not serve
    still raises Triton's own error, from its per-model read."""
    ep = server.endpoint
    models = ["preprocess", "classifier", "postprocess"]
    together = trace.model_statistics(ep, models)
    apart = {m: trace.model_statistics(ep, [m])[m] for m in models}
    assert set(together) == set(models)
    for m in models:  # counts only grow; other tests may run requests in between
        assert 0 < together[m]["count"] <= apart[m]["count"] or together[m] == apart[m]
    with pytest.raises(Exception, match="no_such_model"):
        trace.model_statistics(ep, ["classifier", "no_such_model"])
