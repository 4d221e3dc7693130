"""A drill's own tritonserver (core/drill_server.py) on the real binary: ready for HTTP and gRPC the moment the block
starts, also when several start at once (as the live tier's workers and a class's learners start them); the block
ends without waiting for Triton's graceful exit, which still happens (process gone, run folder and every stub's
shared memory removed); ``wait_for_stop`` waits for it."""

from __future__ import annotations

import os
import threading
import time

import tritonclient.grpc as grpcclient

from triton_kitchen.core import kserve
from triton_kitchen.core.catalog import SLOW_DRILL
from triton_kitchen.core.drill_server import finish_stopping, own_server, slow_inputs
from triton_kitchen.labs import shapes

STARTED_AT_ONCE = 3


def _answers_now(srv) -> dict:
    """The first requests after the block starts: HTTP ready, then one inference over gRPC."""
    ep = srv.endpoint
    code, _ = kserve.request(ep, "GET", "/v2/health/ready", timeout=5.0)
    client = grpcclient.InferenceServerClient(ep.grpc_url)
    try:
        result = client.infer(SLOW_DRILL, slow_inputs(0), client_timeout=10.0)
    finally:
        client.close()
    return {"ready": code, "pid": int(result.as_numpy("PID").reshape(-1)[0]), "ports": dict(srv.ports)}


def test_servers_started_at_once_each_answer_from_their_first_request():
    seen: dict[int, dict | str] = {}

    def one(i: int) -> None:
        try:
            with own_server([SLOW_DRILL]) as srv:
                seen[i] = _answers_now(srv)
        except Exception as exc:  # noqa: BLE001 - the failure is the finding
            seen[i] = f"{type(exc).__name__}: {exc}"

    threads = [threading.Thread(target=one, args=(i,)) for i in range(STARTED_AT_ONCE)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    finish_stopping()
    failed = {i: v for i, v in seen.items() if isinstance(v, str)}
    assert len(seen) == STARTED_AT_ONCE and not failed, failed
    assert all(v["ready"] == 200 for v in seen.values()), seen
    ports = [p for v in seen.values() for p in v["ports"].values()]
    assert len(set(ports)) == len(ports), f"two servers share a port: {seen}"


def test_the_block_ends_before_the_graceful_stop_which_still_happens():
    with own_server([SLOW_DRILL]) as srv:
        _answers_now(srv)
        stubs = shapes.stubs(SLOW_DRILL, srv.pid)
        assert stubs and all(s.region_bytes for s in stubs), stubs
        run_dir = srv.run_dir
        t0 = time.monotonic()
    left_after = time.monotonic() - t0
    assert left_after < 1.0, f"the block waited {left_after:.1f} s for the server's exit"
    assert finish_stopping() >= 1
    assert not srv.running and not run_dir.exists()
    assert not [s.region for s in stubs if os.path.exists(f"/dev/shm/{s.region}")], "a stub's memory was left"


def test_wait_for_stop_ends_the_block_with_the_server_gone():
    with own_server([SLOW_DRILL], wait_for_stop=True) as srv:
        ep = srv.endpoint
    assert not srv.running
    try:
        kserve.request(ep, "GET", "/v2/health/live", timeout=2.0)
        raise AssertionError("the stopped server still answered")
    except kserve.KServeError as exc:
        assert exc.code == "connection", exc.detail


def test_a_drill_whose_server_dies_says_so_with_the_servers_log():
    """A connection refused in the middle of a drill is explained: the exception carries a note that the drill's
    own server stopped, with the end of its log (which stop() then removes)."""
    import signal
    import subprocess

    try:
        with own_server([SLOW_DRILL]) as srv:
            ep = srv.endpoint
            triton = subprocess.run(
                ["pgrep", "-P", str(srv.pid)], capture_output=True, text=True
            ).stdout.split()
            os.kill(int(triton[0]), signal.SIGKILL)
            time.sleep(0.3)
            kserve.load_model(ep, SLOW_DRILL, headers=ep.headers)
        raise AssertionError("a dead server answered")
    except kserve.KServeError as exc:
        assert exc.code == "connection", exc.detail
        notes = "\n".join(getattr(exc, "__notes__", []))
        assert "stopped during the drill" in notes and "log tail" in notes, notes
