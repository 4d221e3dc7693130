"""Helpers shared by tests/unit/test_trace.py and tests/live/test_trace_live.py."""

from __future__ import annotations

from triton_kitchen.tools import trace

ORDER = [
    trace.REQUEST_START,
    trace.QUEUE_START,
    trace.COMPUTE_START,
    trace.COMPUTE_INPUT_END,
    trace.COMPUTE_OUTPUT_START,
    trace.COMPUTE_END,
    trace.REQUEST_END,
]


def check_tree(tl: trace.RequestTimeline, steps: list[str]) -> None:
    assert sorted(c.model for c in tl.root.children) == sorted(steps)
    for child in tl.root.children:
        assert child.parent_id == tl.root.trace_id
        stamps = [child.timestamps[n] for n in ORDER]
        assert stamps == sorted(stamps), (child.model, child.timestamps)
        assert tl.root.start_ns <= child.start_ns <= child.end_ns <= tl.root.end_ns
        assert [p.kind for p in child.phases()] == ["queue", "compute_input", "infer", "compute_output"]
