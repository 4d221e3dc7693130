"""System shared memory as a transport (protocols.shm; ``bench --protocol http-shm|grpc-shm``), on the real server:
the tensors go through a registered region, the request carries only its name and offsets, and no region is left
registered on the server or allocated on this machine, whatever path the run ends on."""

from __future__ import annotations

import json

import numpy as np
import pytest

from triton_kitchen.cli import main as cli
from triton_kitchen.core import kserve
from triton_kitchen.core.server import free_port
from triton_kitchen.tools import bench
from triton_kitchen.tools.load import LoadSpec
from triton_kitchen.tools.protocols import Caller, ProtocolError, ShmCaller, make_caller, sample_inputs
from triton_kitchen.tools.protocols.shm import leftover_regions

MODEL = "ensemble_pipeline"  # input_image FP32 [1, 3, 224, 224] = 602,112 B, output_label FP32 [1, 1000] = 4,000 B
TENSOR_BYTES = 602_112 + 4_000


def _nothing_left(server) -> None:
    assert kserve.system_shm_status(server.endpoint) == [], "a region is still registered on the server"
    assert leftover_regions() == [], "a shared-memory object is still allocated in /dev/shm"


@pytest.fixture(autouse=True)
def _clean_slate(server):
    """One test's leftover region must fail that test only, not every later one that counts regions."""
    yield
    kserve.unregister_system_shm(server.endpoint)


@pytest.fixture(scope="module")
def arrays(server):
    return sample_inputs(server.endpoint, MODEL, "grpc")[1]


@pytest.mark.parametrize("protocol", ["http-shm", "grpc-shm"])
def test_the_tensors_go_through_memory_and_the_answer_is_the_same(server, arrays, protocol):
    plain = Caller(server.endpoint, "grpc", MODEL, arrays)
    caller = make_caller(server.endpoint, protocol, MODEL, arrays)
    assert isinstance(caller, ShmCaller)
    try:
        ref = plain.call()
        result = caller.call()
        assert [r["name"] for r in kserve.system_shm_status(server.endpoint)] == [caller.region]
        assert leftover_regions() == [caller.region]
    finally:
        plain.close()
        caller.close()
    _nothing_left(server)
    np.testing.assert_allclose(result.outputs["output_label"], ref.outputs["output_label"], rtol=1e-6)
    assert result.protocol == protocol and result.shm_bytes == TENSOR_BYTES
    assert ref.request_bytes > 602_112 and result.request_bytes < 1_000  # the tensor left the request...
    assert ref.response_bytes > 4_000 and result.response_bytes < 1_000  # ...and the answer


@pytest.mark.parametrize("protocol", ["http-shm", "grpc-shm"])
def test_bench_reports_shm_bytes_apart_and_leaves_nothing(server, protocol, capsys):
    url = server.grpc_url if protocol == "grpc-shm" else server.http_url
    rc = cli.main(["bench", "--model", MODEL, "--protocol", protocol, "--url", url, "--stats-url", server.http_url,
                   "--concurrency", "2", "--duration", "1", "--max-windows", "1", "--json"])  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["requests"] and not doc["errors"]
    answered = doc["shm_bytes"] // TENSOR_BYTES
    assert answered >= doc["requests"] and doc["shm_bytes"] == answered * TENSOR_BYTES
    assert doc["request_bytes"] < 1_000 * answered  # the encoded request message only
    assert doc["wire_bytes_sent"] < 2_000 * answered  # nor does the tensor cross the socket
    _nothing_left(server)


def test_a_request_the_server_refuses_still_lets_the_region_go(server):
    caller = ShmCaller(
        server.endpoint, "http-shm", MODEL, {"input_image": np.zeros((1, 3, 100, 100), np.float32)}
    )
    with pytest.raises(ProtocolError, match="input_image"):
        caller.call()
    assert kserve.system_shm_status(server.endpoint)  # registered until the caller is closed
    caller.close()
    _nothing_left(server)


@pytest.mark.parametrize("protocol", ["http-shm", "grpc-shm"])
def test_a_failed_registration_allocates_nothing(server, arrays, protocol):
    """The region is made, then the server cannot be told (nothing listens at the address): it is unlinked."""
    caller = ShmCaller(server.endpoint, protocol, MODEL, arrays, address=f"127.0.0.1:{free_port()}")
    with pytest.raises(ProtocolError, match="registering shared memory"):
        caller.call()
    caller.close()
    _nothing_left(server)


def test_unknown_model_and_dead_server_leave_nothing(server, capsys):
    assert cli.main(["bench", "--model", "no_such_model", "--protocol", "grpc-shm", "--url", server.grpc_url,
                     "--stats-url", server.http_url, "--duration", "0.5", "--max-windows", "1"]) == 1  # fmt: skip
    assert "unknown model" in capsys.readouterr().err
    assert cli.main(["bench", "--model", MODEL, "--protocol", "http-shm", "--url", f"127.0.0.1:{free_port()}",
                     "--duration", "0.5", "--max-windows", "1"]) == 1  # fmt: skip
    assert "Connection refused" in capsys.readouterr().err
    _nothing_left(server)


@pytest.mark.parametrize("protocol", ["http-shm", "grpc-shm"])
def test_ctrl_c_during_a_run_unregisters_every_worker_region(server, arrays, protocol):
    """A KeyboardInterrupt in the run's thread (Ctrl-C) while four workers hold regions: all are let go."""
    seen = []

    def interrupt(progress):
        seen.append(kserve.system_shm_status(server.endpoint))
        if progress.done >= 1 and len(seen[-1]) == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        spec = LoadSpec(MODEL, protocol, 4, 20.0, inputs=arrays, server_side=False)
        bench.run_bench(server.endpoint, spec, progress=interrupt, progress_every_s=0.05)
    assert len(seen[-1]) == 4  # four regions were registered when it was interrupted
    _nothing_left(server)


def test_compression_is_refused_before_anything_starts(capsys):
    assert cli.main(["bench", "--model", MODEL, "--protocol", "grpc-shm", "--compression", "gzip"]) == 2
    assert "never cross the socket" in capsys.readouterr().err
    assert leftover_regions() == []


@pytest.mark.parametrize("protocol", ["http-shm", "grpc-shm"])
def test_a_region_a_timed_out_request_still_uses_is_let_go_when_the_server_is_done(server, arrays, protocol):
    """The client gives up at its deadline while the server still works on the request: Triton refuses to
    unregister a region in use ("it is currently in use"), so closing asks again until it is free."""
    batch = {
        "input_image": np.repeat(arrays["input_image"], 8, axis=0)
    }  # about a 50 ms deadline's work on CPU
    for _ in range(5):  # until one call outlives its deadline
        caller = ShmCaller(server.endpoint, protocol, MODEL, batch)
        try:
            caller.call(timeout_s=0.05)
        except ProtocolError as exc:
            assert exc.code == "timeout"
            caller.close()
            break
        caller.close()
    else:
        pytest.skip("the server answered a batch of 8 within 50 ms five times: no request was left in flight")
    _nothing_left(server)
