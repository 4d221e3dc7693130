"""trace.py on the recorded real traces and on live ones from the embedded server.

Here the tests that need no server, app or browser; the others: tests/live/test_trace_live.py."""

from __future__ import annotations

import json

import pytest
from _shared.trace import check_tree

from triton_kitchen.core.ensemble import build_dag
from triton_kitchen.core.server import DEFAULT_REPOSITORY
from triton_kitchen.tools import trace
from triton_kitchen.tools.flow import RECORDED_TRACE, step_models
from triton_kitchen.tools.trace.capture import file_signatures, find_new


def recorded_records() -> list[tuple[str, list[dict]]]:
    data = json.loads(RECORDED_TRACE.read_text())
    return [(item["root"]["model_name"], item["triton_records"]) for item in data["timelines"]]


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
