"""Chapter 9's scheduler experiments (triton_kitchen.labs.scheduling): configs and outcomes offline; on the real embedded
server, what chapter 9's page does not run (a queue timeout, KIND_GPU, a closed repository API), each leaving the
classifier's config exactly as it was. The page's own runs are asserted in tests/live/test_ch9_live.py.

The tests of this topic that need no server, app or browser: tests/unit/test_scheduling.py."""

from __future__ import annotations

import pytest

from triton_kitchen.core import kserve, load_refusal, override
from triton_kitchen.labs import scheduling
from triton_kitchen.labs.scheduling import QueuePolicy

pytestmark = pytest.mark.timing  # wall-clock figures: run alone (README: tests)


# -- on the real server --------------------------------------------------------------------------------------
# The page's own runs (instances, priorities overtaking, a full queue refusing, Little's law) are asserted in
# tests/live/test_ch9_live.py, which drives them on the real server; here, what the page does not run.
@pytest.fixture
def ep(server):
    endpoint = server.endpoint
    original = kserve.model_config(endpoint, override.MODEL)
    yield endpoint
    assert kserve.model_config(endpoint, override.MODEL) == original, "the config was not restored"


def test_a_queue_timeout_rejects_or_delays(ep):
    rejected = scheduling.queue_demo(ep, QueuePolicy(timeout_us=10_000, action="REJECT"), n=32)
    assert any("Request timeout expired" in text for text in rejected.burst.errors()), rejected.burst.errors()
    delayed = scheduling.queue_demo(ep, QueuePolicy(timeout_us=10_000, action="DELAY"), n=32)
    assert delayed.outcome() == "all", delayed.burst.errors()


def test_preserve_ordering_is_refused_beside_priorities_and_delay(server, ep):
    """Triton's words (core r24.10 model_config_utils.cc), from the real server: its answer to the load request is
    only "failed to poll", its log says why; the classifier keeps its config."""
    name = override.MODEL
    for case, words in (
        ("priority", f"Only one priority level is allowed when 'preserve_ordering' is true for {name}"),
        (
            "delay",
            f"Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for {name}",
        ),
    ):
        refusal = scheduling.ordering_refusal(ep, case, server.log_tail)
        assert "failed to poll from model repository" in refusal.answer, refusal
        assert refusal.logged == f"{load_refusal.POLL_FAILED} '{name}': {words}", refusal


def test_kind_gpu_is_refused_on_this_cpu_server(ep):
    assert "no GPUs are available" in scheduling.gpu_refusal(ep)


def test_a_closed_repository_api_is_not_passed_off_as_a_gpu_verdict(server):
    """Without the key (a remote server) the load is refused for its API, not for the GPU: say so, as an error."""
    from triton_kitchen.core.endpoint import Endpoint

    remote = Endpoint(server.http_url, server.grpc_url)
    with pytest.raises(override.BatchingError) as info:
        scheduling.gpu_refusal(remote)
    assert info.value.code == "no_control_api"
