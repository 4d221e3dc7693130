"""trace.py on the recorded real traces and on live ones from the embedded server."""

from __future__ import annotations

import contextlib
import json

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from triton_kitchen.core import clients
from triton_kitchen.core.ensemble import build_dag
from triton_kitchen.core.server import DEFAULT_REPOSITORY
from triton_kitchen.tools import trace
from triton_kitchen.tools.flow import RECORDED_TRACE, step_models
from triton_kitchen.tools.trace.capture import file_signatures, find_new

ORDER = [
    trace.REQUEST_START,
    trace.QUEUE_START,
    trace.COMPUTE_START,
    trace.COMPUTE_INPUT_END,
    trace.COMPUTE_OUTPUT_START,
    trace.COMPUTE_END,
    trace.REQUEST_END,
]


def recorded_records() -> list[tuple[str, list[dict]]]:
    data = json.loads(RECORDED_TRACE.read_text())
    return [(item["root"]["model_name"], item["triton_records"]) for item in data["timelines"]]


def check_tree(tl: trace.RequestTimeline, steps: list[str]) -> None:
    assert sorted(c.model for c in tl.root.children) == sorted(steps)
    for child in tl.root.children:
        assert child.parent_id == tl.root.trace_id
        stamps = [child.timestamps[n] for n in ORDER]
        assert stamps == sorted(stamps), (child.model, child.timestamps)
        assert tl.root.start_ns <= child.start_ns <= child.end_ns <= tl.root.end_ns
        assert [p.kind for p in child.phases()] == ["queue", "compute_input", "infer", "compute_output"]


@pytest.mark.parametrize("model,records", recorded_records(), ids=[m for m, _ in recorded_records()])
def test_recorded_raw_triton_records_parse_into_one_tree(model, records):
    assert all("id" in r for r in records) and any("parent_id" in r for r in records)
    (tl,) = trace.parse_records(records)
    models, _ = step_models(build_dag(model, DEFAULT_REPOSITORY, validate=False))
    assert tl.model == model and tl.protocol == "grpc"
    check_tree(tl, models)


def test_numbered_trace_files_read_in_index_order(tmp_path):
    recs = recorded_records()
    base = tmp_path / "trace.json"
    for i, (_, records) in enumerate(recs):  # .0 .1 ... and a .10 that must sort after .2
        (tmp_path / f"trace.json.{10 if i == len(recs) - 1 else i}").write_text(json.dumps(records))
    (tmp_path / "trace.json.3.tmp").write_text("not a trace")
    names = [p.name for p in trace.trace_files(base)]
    assert names[-1] == "trace.json.10" and "trace.json.3.tmp" not in names
    tls = trace.parse_records([r for f in trace.trace_files(base) for r in trace.read_json_array(f)])
    assert sorted(t.model for t in tls) == sorted(m for m, _ in recs)


def test_a_rewritten_trace_file_counts_as_new(tmp_path):
    """A restarted server writes trace.json.0 again: a file seen before under that name is new once rewritten."""
    (model, records), *_ = recorded_records()
    base = tmp_path / "trace.json"
    (tmp_path / "trace.json.0").write_text(json.dumps(records))
    known = file_signatures(base)
    t0, t1 = 0, 2**63
    assert find_new(base, known, model, t0, t1) == []
    (tmp_path / "trace.json.0").write_text(json.dumps(records) + " ")  # the next server's first trace
    found = find_new(base, known, model, t0, t1)
    assert [tl.model for tl in found] == [model]


def test_timeline_round_trips_through_json():
    data = json.loads(RECORDED_TRACE.read_text())["timelines"][0]
    tl = trace.timeline_from_dict(data)
    again = trace.timeline_from_dict(json.loads(json.dumps(tl.to_dict())))
    assert again.events() == tl.events() and again.network_phases() == tl.network_phases()


def test_two_executions_of_one_model_go_to_the_right_steps():
    (_, records) = next(r for r in recorded_records() if r[0] == "tta_ensemble")
    (tl,) = trace.parse_records(records)
    models, preds = step_models(build_dag("tta_ensemble", DEFAULT_REPOSITORY, validate=False))
    trace.assign_steps(tl, models, preds)
    by = tl.by_step()
    assert sorted(by) == list(range(len(models)))
    hflip = by[models.index("hflip")][0]
    second = by[3][0]  # classifier on the mirrored image
    assert models[3] == "classifier" and second.start_ns >= hflip.timestamps[trace.COMPUTE_OUTPUT_START]


def test_overlap():
    assert trace.overlap_ns([(0, 10)], [(5, 20)]) == 5
    assert trace.overlap_ns([(0, 10), (30, 40)], [(5, 35)]) == 10
    assert trace.overlap_ns([(0, 1)], [(2, 3)]) == 0


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


def test_statistics_layout_order_is_topological():
    """graphlib order: predecessors first, lowest index first among the ready; a cycle keeps index order."""
    from triton_kitchen.tools.trace.statistics import _topological

    assert _topological(4, [[3], [0], [0], []]) == [3, 0, 1, 2]
    assert _topological(5, [[], [0], [0], [1, 2], [3]]) == [0, 1, 2, 3, 4]  # tta_ensemble's shape
    assert _topological(2, [[1], [0]]) == [0, 1]


def test_statistics_timeline_lays_branches_side_by_side():
    models, preds = ["a", "b", "c", "d"], [[], [0], [0], [1, 2]]
    zero = {"count": 0, "exec": 0, "queue": 0, "compute_input": 0, "infer": 0, "compute_output": 0}
    before = {m: dict(zero) for m in models}
    after = {m: {**zero, "count": 1, "infer": 1000 * (i + 1)} for i, m in enumerate(models)}
    tl = trace.statistics_timeline("e", models, preds, before, after)
    by = {c.model: c for c in tl.root.children}
    assert by["b"].start_ns == by["c"].start_ns == by["a"].end_ns  # both branches start when a ends
    assert by["d"].start_ns == max(by["b"].end_ns, by["c"].end_ns)


def test_trace_targets_are_endpoints_or_addresses():
    from triton_kitchen.core.endpoint import Endpoint
    from triton_kitchen.core.errors import KitchenError

    ep = Endpoint(http_url="127.0.0.1:1", grpc_url="127.0.0.1:2")
    assert trace.as_target(ep) is ep and trace.as_target("127.0.0.1:8123") == "127.0.0.1:8123"
    with pytest.raises(TypeError):
        trace.as_target(object())  # a tritonclient client no longer: every caller passes an Endpoint
    assert isinstance(trace.TraceError("not_found", "x"), KitchenError)
