"""A server that refuses client shared memory, as Triton 2.68 (NGC 26.04) does unless it was started with
``--allow-client-shm=true``: the shared-memory callers (the labs' and ``bench --protocol http-shm|grpc-shm``)
name the refusal and the flag, and their clean-up takes the refused unregister in its stride.

No 26.x server runs here (the embedded one is 2.51, which accepts client shared memory): the server in these
tests is ``tests/_shared/shm_refusing_server.py``, a stand-in for a 26.04 server that answers register and
unregister as server r26.04 does (HTTP 501 / gRPC UNIMPLEMENTED, Triton's exact message).
"""

from __future__ import annotations

import numpy as np
import pytest
from _shared.shm_refusing_server import DISABLED, EXTENSIONS, MODEL, RefusingServer

from triton_kitchen.core import kserve
from triton_kitchen.core.endpoint import Endpoint
from triton_kitchen.tools.protocols import ProtocolError
from triton_kitchen.tools.protocols import shm as shm_protocol

ARRAYS = {"INPUT0": np.arange(4, dtype=np.float32)}


@pytest.fixture(scope="module")
def refusing():
    with RefusingServer() as s:
        yield s


def _endpoint(s: RefusingServer) -> Endpoint:
    return Endpoint(http_url=s.http_url, grpc_url=s.grpc_url)


def test_the_stand_in_answers_as_26_04_does(refusing):
    """HTTP 501 with Triton's words, and the extension list that still names shared memory."""
    assert (
        "system_shared_memory" in EXTENSIONS
        and kserve.server_metadata(refusing.http_url)["version"] == "2.68.0"
    )
    with pytest.raises(kserve.KServeError) as caught:
        kserve.register_system_shm(refusing.http_url, "r", "/r", 8)
    assert caught.value.status == 501 and DISABLED in caught.value.detail


@pytest.mark.parametrize("protocol", shm_protocol.SHM_PROTOCOLS)
def test_a_refused_register_is_named_and_cleaned_up(refusing, protocol):
    api = "grpc" if protocol == "grpc-shm" else "http"
    before = len(refusing.calls.of(api))
    caller = shm_protocol.ShmCaller(_endpoint(refusing), protocol, MODEL, ARRAYS)
    with pytest.raises(ProtocolError) as caught:
        caller.call()
    assert caught.value.code == "shm_refused"
    assert DISABLED in str(caught.value)
    # the clean-up asked the server to let go, was refused, and went on: the region is gone here, no error
    asked = refusing.calls.of(api)[before:]
    assert asked == [("register", caller.region), ("unregister", caller.region)]
    caller.close()
    assert shm_protocol.leftover_regions() == []


@pytest.mark.parametrize("protocol", shm_protocol.SHM_PROTOCOLS)
def test_refusal_asks_once_with_a_one_byte_region(refusing, protocol):
    said = shm_protocol.refusal(_endpoint(refusing), protocol)
    assert said.endswith(DISABLED) and ("HTTP 501" in said) == (protocol == "http-shm")
    assert shm_protocol.leftover_regions() == []


def test_the_embedded_kind_of_server_is_not_a_refusal():
    assert not shm_protocol.client_shm_refused(kserve.KServeError("http", "HTTP 400: region 'x' in use", 400))
    assert shm_protocol.client_shm_refused(kserve.KServeError("http", f"POST ...: HTTP 501: {DISABLED}", 501))


@pytest.mark.parametrize("protocol", shm_protocol.SHM_PROTOCOLS)
def test_bench_says_the_server_needs_the_flag(refusing, protocol, capsys):
    from triton_kitchen.cli.main import main

    url = refusing.grpc_url if protocol == "grpc-shm" else refusing.http_url
    code = main(["bench", "--model", MODEL, "--protocol", protocol, "--url", url, "--duration", "1"])
    err = capsys.readouterr().err
    assert code == 1
    assert DISABLED in err and "--allow-client-shm=true" in err and "http-binary or grpc" in err
    assert shm_protocol.leftover_regions() == []


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_labs_tell_the_learner_about_the_flag(lang):
    """What a page shows for the refusal (ui.errors.message_for, the one way from an error to a message): the
    flag, the version range in the course's marker, and a warning (a limit of the server, not a failure)."""
    from ui.errors import message_for

    msg = message_for(
        ProtocolError(f"registering shared memory: {DISABLED}", "shm_refused"), lang, remote=True
    )
    assert msg.key == "error.shm_refused" and msg.warning
    assert "--allow-client-shm=true" in msg.text
    assert ("（Triton 2.68 起）" if lang == "zh" else "(Triton 2.68+)") in msg.text
