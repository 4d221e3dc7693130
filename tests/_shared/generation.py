"""Chapter 11's checks that both tiers use: every animation frame is one recorded step, and a recorded run.

``RECORDED`` is a real run of :func:`triton_kitchen.labs.generation.compare_schedulers` on the embedded server (3
clients, 2 jobs each, both models), saved as it came back (every client run with the step records its responses
carried). Record it again after the model's records change:

    . .venv/bin/activate; OMP_NUM_THREADS=1 python tests/_shared/generation.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RECORDED = Path(__file__).resolve().parent / "generation_run.json"
NAMES = {
    k: k
    for k in (
        "wait",
        "idle",
        "token",
        "join",
        "leave",
        "time",
        "sequence",
        "step",
        "kv",
        "request_level",
        "in_flight",
    )
}


def check_frames(run) -> int:
    """The timeline's frames are the run's recorded steps, one each, in order, and what each frame draws is what
    the records hold up to that step: the tokens emitted (each at its step's end) and the places held idle.
    Returns the number of frames."""
    from triton_kitchen.labs import generation as lab

    fig = lab.timeline_figure(run, NAMES)
    steps = run.steps
    assert steps, "a run with no recorded step"
    assert [f.name for f in fig.frames] == [lab.frame_name(s) for s in steps]
    assert len({f.name for f in fig.frames}) == len(fig.frames), "two frames for one step"
    recorded = {
        (s["scheduler"], s["step"]) for r in run.load.runs for rec in r.records for s in rec.get("steps", [])
    }
    assert {(s["scheduler"], s["step"]) for s in steps} == recorded
    tokens_so_far = idle_so_far = 0
    for frame, step in zip(fig.frames, steps, strict=True):
        traces = {t.name: t for t in frame.data}
        emitted = [b for b in step["batch"] if b["tokens"]]
        tokens_so_far += len(emitted)
        idle_so_far += sum(1 for b in step["batch"] if not b["tokens"])
        token_x = list(traces["token"].x)
        assert len(token_x) == tokens_so_far, (frame.name, len(token_x), tokens_so_far)
        assert len(traces["idle"].x) == idle_so_far, frame.name
        end = run.at_ms(step["end_ns"])
        assert token_x.count(end) >= len(emitted), f"{frame.name}: its tokens are not at its end"
        assert max(token_x + list(traces["idle"].x)) <= end, f"{frame.name} draws a later step"
    return len(fig.frames)


def record(path: Path = RECORDED, clients: int = 3) -> None:
    """Run both schedulers on a fresh embedded server and save the comparison."""
    from triton_kitchen.core.catalog import STREAMER, TINY_LM, TINY_LM_IFB
    from triton_kitchen.core.server import EmbeddedServer
    from triton_kitchen.labs import generation as lab

    srv = EmbeddedServer(
        http_port=0,
        grpc_port=0,
        metrics_port=0,
        load_models=[TINY_LM, TINY_LM_IFB, STREAMER],
        build_models=False,
    )
    srv.start(timeout=180)
    try:
        lab.compare_schedulers(srv.endpoint, clients, jobs_per_client=1)  # warm-up, not kept
        comparison = lab.compare_schedulers(srv.endpoint, clients)
    finally:
        srv.stop()
    path.write_text(json.dumps(lab.comparison_to_dict(comparison), ensure_ascii=False, separators=(",", ":")))
    print(f"wrote {path}: " + ", ".join(f"{r.scheduler} {len(r.steps)} steps" for r in comparison.runs))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    record()
