"""The embedded server's lifecycle: start, stop, ports, restricted API, no orphaned processes.

The tests of this topic that need no server, app or browser: tests/unit/test_server_lifecycle.py."""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from _shared.server_lifecycle import dead_pid, run_folder

from triton_kitchen.core import kserve
from triton_kitchen.core.errors import KitchenError
from triton_kitchen.core.server import (
    REPO_ROOT,
    RUN_OWNER,
    EmbeddedServer,
    ServerStartError,
    probe_kserve,
)

TINY_MODELS = ("hflip",)


@pytest.fixture()
def tiny_repo(tmp_path: Path) -> Path:
    """A one-model copy of the repository: quick to start."""
    repo = tmp_path / "repo"
    for name in TINY_MODELS:
        shutil.copytree(REPO_ROOT / "model_repository" / name, repo / name)
    return repo


def server_processes(root_pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(root_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [
            p for p in alive if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        time.sleep(0.1)
    return alive


def test_start_stop_leaves_no_process_and_no_run_folder(tiny_repo):
    srv = EmbeddedServer(tiny_repo, http_port=0, grpc_port=0, metrics_port=0, build_models=False)
    assert not srv.run_dir.exists()  # a server never started leaves nothing behind
    orphan = run_folder(srv.run_dir.parent, f"run-test-{os.getpid()}", f"{socket.gethostname()} {dead_pid()}")
    srv.start(timeout=60)
    assert not orphan.exists()  # a start prunes the folders of app processes that are gone
    assert (srv.run_dir / RUN_OWNER).read_text().split() == [socket.gethostname(), str(os.getpid())]
    children = server_processes(srv.pid)
    names = " ".join(p.name() for p in children)
    assert "tritonserver" in names and "triton_python_backend_stub" in names, names
    assert probe_kserve(srv.http_url)
    assert "tritonserver" in srv.log_tail()
    srv.stop()
    assert wait_gone([p.pid for p in children], 10) == []
    assert not probe_kserve(srv.http_url)
    assert not srv.run_dir.exists()


def test_probe_kserve_is_live_not_ready(server):
    # one probe in the app, meaning live: with strict readiness an unloaded model makes the server "not ready"
    assert probe_kserve is kserve.live
    kserve.unload_model(server.endpoint, "streamer")  # no ensemble uses it
    try:
        assert not kserve.ready(server.endpoint) and probe_kserve(server.http_url)
    finally:
        kserve.load_model(server.endpoint, "streamer")
    assert kserve.ready(server.endpoint)


def test_parent_killed_takes_server_down(tiny_repo, tmp_path):
    """kill -9 of the app process must not leave tritonserver or its stubs behind."""
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, time, psutil
            sys.path.insert(0, {str(REPO_ROOT)!r})
            from triton_kitchen.core.server import EmbeddedServer
            srv = EmbeddedServer({str(tiny_repo)!r}, http_port=0, grpc_port=0, metrics_port=0, build_models=False)
            srv.start(timeout=60)
            pids = [p.pid for p in psutil.Process(srv.pid).children(recursive=True)] + [srv.pid]
            print(" ".join(map(str, pids)), flush=True)
            time.sleep(600)
            """
        )
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        line = parent.stdout.readline()
        pids = [int(p) for p in line.split()]
        assert len(pids) >= 3, line
        parent.send_signal(signal.SIGKILL)
        parent.wait(5)
        assert wait_gone(pids, 15) == [], "processes outlived their parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.stdout.close()


def test_taken_port_is_replaced_and_reported(tiny_repo):
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        taken = blocker.getsockname()[1]
        srv = EmbeddedServer(tiny_repo, http_port=taken, grpc_port=0, metrics_port=0, build_models=False)
        with srv:
            assert srv.ports["http"] != taken
            assert any(str(taken) in note for note in srv.port_notes)
            assert probe_kserve(srv.http_url)


def test_another_servers_answer_on_our_ports_is_not_our_start(tiny_repo, monkeypatch):
    """Two apps started at the same moment can both find 8000 free; the one that binds second exits. That try
    must not be called ready because the other server answers on the port (the English click pass met a server
    that was "up", then "stopped 1 s ago"); the start tries again on ports it chooses anew, and says so."""
    with EmbeddedServer(tiny_repo, http_port=0, grpc_port=0, metrics_port=0, build_models=False) as first:
        ports = {f"{name}_port": port for name, port in first.ports.items()}  # the same ports asked for
        second = EmbeddedServer(tiny_repo, **ports, build_models=False)
        choose, tries = second._choose_ports, []

        def same_ports_first() -> None:  # the first try: as if both had checked the ports before either bound
            tries.append(1)
            if len(tries) > 1:
                return choose()
            second.ports, second.port_notes = dict(first.ports), []

        monkeypatch.setattr(second, "_choose_ports", same_ports_first)
        try:
            second.start(timeout=60)
            assert len(tries) == 2  # the first try failed, not called ready on the other's answer
            assert second.ports["http"] != first.ports["http"] and second.running
            assert any(str(first.ports["http"]) in note for note in second.port_notes)  # and it says so
            assert second._answers_with_our_key() and probe_kserve(second.http_url)
        finally:
            second.stop()
        assert probe_kserve(first.http_url)  # the first one never noticed


def test_failed_start_quotes_the_log(tmp_path):
    repo = tmp_path / "broken"
    (repo / "bad" / "1").mkdir(parents=True)
    (repo / "bad" / "config.pbtxt").write_text('name: "bad"\nbackend: "python"\nthis is not protobuf\n')
    srv = EmbeddedServer(repo, http_port=0, grpc_port=0, metrics_port=0, build_models=False)
    with pytest.raises(ServerStartError) as err:
        srv.start(timeout=60)
    assert "bad" in str(err.value)
    assert srv.pid is None
    assert isinstance(err.value, KitchenError) and err.value.code == "server_start" and not err.value.aborted
    assert "bad" in srv.log_tail()  # the log stays readable after a failed start, until stop()
    srv.stop()
    assert not srv.run_dir.exists()


def test_repository_api_needs_the_key(server):
    with pytest.raises(kserve.KServeError) as err:
        kserve.unload_model(server.http_url, "hflip")  # the address alone: no key
    assert err.value.code == "no_control_api" and "restricted" in err.value.detail.lower()
    assert kserve.model_ready(server.http_url, "hflip")
    index = kserve.repository_index(server.http_url, headers=server.repo_key)
    assert {m["name"] for m in index} >= {"image_classifier", "ensemble_pipeline", "streamer"}


def test_binds_loopback_only(server):
    assert server.http_url.startswith("127.0.0.1:")
    conns = [c for c in psutil.net_connections("tcp") if c.status == psutil.CONN_LISTEN]
    ours = {server.ports["http"], server.ports["grpc"], server.ports["metrics"]}
    addrs = {ipaddress.ip_address(c.laddr.ip) for c in conns if c.laddr.port in ours}
    assert addrs, "no listening socket found"
    # gRPC listens on the IPv4-mapped form (::ffff:127.0.0.1): still loopback only
    assert all((getattr(a, "ipv4_mapped", None) or a).is_loopback for a in addrs), addrs


def test_serve_cli_ctrl_c_stops_everything(tiny_repo):
    cmd = [sys.executable, "-m", "triton_kitchen", "serve", "--repo", str(tiny_repo)]
    cmd += ["--http-port", "0", "--grpc-port", "0", "--metrics-port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO_ROOT)
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("ready in") or line.startswith("error"):
                break
        assert lines[-1].startswith("ready in"), "".join(lines)
        children = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        assert len(children) >= 3  # supervisor, tritonserver, a Python stub
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
        assert wait_gone(children, 10) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()


@pytest.mark.timing
def test_killed_server_is_noticed_within_two_seconds_and_restarted(tiny_repo):
    srv = EmbeddedServer(tiny_repo, http_port=0, grpc_port=0, metrics_port=0, build_models=False)
    with srv:
        triton = next(p for p in server_processes(srv.pid) if p.name() == "tritonserver")
        assert not srv.ensure_running()  # healthy: nothing to do
        t0 = time.monotonic()
        triton.kill()
        while srv.running and time.monotonic() - t0 < 5:
            time.sleep(0.05)
        noticed = time.monotonic() - t0
        assert srv.died and noticed < 2.0, f"noticed after {noticed:.2f} s"
        assert srv.ensure_running(timeout=60) and srv.restarts == 1
        assert kserve.model_ready(srv.http_url, "hflip")
        assert "tritonserver" in (srv.log_file.with_suffix(".log.previous")).read_text()
        srv.restart(timeout=60)  # a restart keeps the run folder: the last log stays beside the new one
        assert srv.running and "tritonserver" in srv.log_file.with_suffix(".log.previous").read_text()
    assert not srv.run_dir.exists()  # the crashed server's folder went with the stop
