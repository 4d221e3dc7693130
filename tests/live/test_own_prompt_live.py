"""Chapter 11's own-prompt element on the real server: the client's time to first token and inter-token latency
against the server's record of the same requests (in-flight model, 1 and 8 clients), and every bad input through
the lab function and through the page (AppTest, zh and en).

The tests of this topic that need no server: tests/unit/test_own_prompt.py."""

from __future__ import annotations

import os
import threading

import pytest
from conftest import open_app_page, shown_text

from triton_kitchen.core import lessons
from triton_kitchen.core.catalog import TINY_LM_IFB
from triton_kitchen.labs import generation as lab
from triton_kitchen.labs import own_prompt as own
from triton_kitchen.tools import generation as G

PAGE = "views/ch11_generation.py"


def _agree(client: float, server: float) -> bool:
    """Within 10 % of the server's figure, or 5 ms."""
    return abs(client - server) <= max(0.10 * server, 5.0)


@pytest.mark.timing  # compares measured times: runs alone, not beside other workers
@pytest.mark.parametrize("clients", [1, 8])
def test_client_and_server_agree_on_ttft_and_itl(server, clients):
    """p50 time to first token and p50 inter-token latency, by the client (arrival after its send) and by the
    server's record (the end of the step that computed the token, after the same send: Triton's queue
    included, as the wait before each request's first step shows)."""
    jobs = lab.draw_jobs(2 * clients, 2026)
    G.closed_loop(server.endpoint, TINY_LM_IFB, jobs[:2], 2)  # the model's first steps are slower
    load = G.closed_loop(server.endpoint, TINY_LM_IFB, jobs, clients, timeout_s=15)
    assert not [r.error for r in load.runs if r.error]
    run = lab.SchedulerRun("in_flight", TINY_LM_IFB, load)
    client, srv = run.client(), run.server()
    waits = [
        own.OwnResult(own.OwnAsk(j), r).figures()["wait_ms"] for j, r in zip(jobs, load.runs, strict=True)
    ]
    # where a gap comes from: the client's arrival minus the end of the step that made the token (one clock), for
    # the first token (its response carries the HTTP headers the client parses) and for the later ones
    delivery: dict[str, list[float]] = {"first": [], "later": []}
    for j, r in zip(jobs, load.runs, strict=True):
        steps = own.OwnResult(own.OwnAsk(j), r).token_steps()
        for k, (step, arrived) in enumerate(zip(steps, r.arrivals_ns, strict=False)):
            delivery["first" if k == 0 else "later"].append((arrived - step["end_ns"]) / 1e6)
    figures = {
        "ttft": (client["ttft_ms"]["p50"], srv["ttft_ms"]["p50"]),
        "itl": (client["itl_ms"]["p50"], srv["itl_ms"]["p50"]),
        "wait_p50": G.percentile(waits, 50),
        "delivery_p50": {k: G.percentile(v, 50) for k, v in delivery.items()},
        "load_average": os.getloadavg()[0],
    }
    print(f"clients={clients}", figures)
    assert all(w is not None and w > 0 for w in waits)
    for key in ("ttft", "itl"):
        assert _agree(*figures[key]), (key, figures)


def test_bad_input_through_the_lab(server):
    ep = server.endpoint
    with pytest.raises(own.EmptyPrompt):
        own.own_ask("  \n", 8, 0)
    low = own.own_ask("hi", 0, 0)
    assert low.job.max_tokens == 1 and low.notes == (("tokens_low", {"asked": 0, "used": 1}),)
    high = own.own_ask("hi", 10**9, 99)
    assert high.job.max_tokens == own.OWN_MAX_TOKENS and high.job.temperature == own.OWN_MAX_TEMPERATURE
    assert [k for k, _ in high.notes] == ["tokens_high", "temperature"]

    # over the context: the oldest tokens are dropped, the record says how many
    long = own.own_ask("长" * 200, 4, 0)  # 600 byte tokens
    box: dict = {}
    text = "".join(own.own_stream(ep, long, own.own_request_id(), box))
    result = own.own_result(ep, long, box)
    first = result.first_record
    assert first["dropped_prompt_tokens"] == 600 - first["prompt_tokens"] > 0
    assert text == result.run.text and result.run.tokens <= 4 and result.ended["reason"]

    # Stop (the page's script ends and closes the stream) and a stop event: cancelled, its KV cache freed; found
    # also while other learners generate (their responses, not a probe's, carry the step that ended it)
    others = [G.Job("others " * 4, 64, parameters={"ignore_eos": True})] * 8
    crowd = threading.Thread(target=G.closed_loop, args=(ep, TINY_LM_IFB, others, 4), daemon=True)
    crowd.start()
    for how in ("close", "event"):
        ask = own.own_ask("Triton", own.OWN_MAX_TOKENS, 0)
        box, stop = {}, threading.Event()
        stream = own.own_stream(ep, ask, own.own_request_id(), box, stop)
        for i, _ in enumerate(stream):  # the event: the stream ends by itself after the next response
            if i == 2 and how == "close":
                stream.close()
                break
            if i == 2:
                stop.set()
        result = own.own_result(ep, ask, box)
        assert result.stopped and 3 <= result.run.tokens < own.OWN_MAX_TOKENS, how
        assert result.ended and result.ended["reason"] in ("cancelled", "gone"), (how, result.ended)
        assert result.ended["kv_bytes_freed"] > 0
    crowd.join(30)


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_own_prompt_on_the_page(embedded, lang):
    t = lambda key, **kw: lessons.t(key, lang, **kw)  # noqa: E731
    at = open_app_page(PAGE, lang)
    at.text_area(key="ch11_own_prompt").set_value("")
    at.button(key="ch11_own_go").click().run()
    assert t("ch11.own_empty") in shown_text(at) and "ch11_own_result" not in at.session_state

    at.text_area(key="ch11_own_prompt").set_value("长" * 200)
    at.number_input(key="ch11_own_tokens").set_value(0)
    at.button(key="ch11_own_go").click().run()
    result = at.session_state["ch11_own_result"]
    assert result.run.error is None and result.run.tokens == 1
    shown = shown_text(at) + "\n".join(e.value for e in at.info)
    dropped = result.first_record["dropped_prompt_tokens"]
    assert dropped > 0 and t("ch11.own_note_tokens_low", asked=0, used=1) in shown
    kept = result.first_record["prompt_tokens"]
    context = result.first_record["context_length"]
    assert t("ch11.own_dropped", total=600, context=context, dropped=dropped, kept=kept) in shown
    figures = result.figures()
    assert figures["ttft_client"] > 0 and figures["ttft_server"] > 0 and figures["wait_ms"] > 0
    assert t("ch11.own_sides") in shown


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_own_prompt_waits_in_line_with_its_place_shown(embedded, lang):
    """The class's seats all taken: the page shows the learner's place and sends nothing; a seat freed, the
    next run streams."""
    t = lambda key, **kw: lessons.t(key, lang, **kw)  # noqa: E731
    at = open_app_page(PAGE, lang)
    others = [own.SEATS.join() for _ in range(own.SEATS.total + 1)]  # every seat taken, one already waiting
    try:
        at.button(key="ch11_own_go").click().run()
        infos = "\n".join(e.value for e in at.info)
        assert t("ch11.own_wait", seats=own.SEATS.total, ahead=2) in infos
        assert "ch11_own_result" not in at.session_state
    finally:
        for ticket in others:
            own.SEATS.leave(ticket)
    at.run()
    result = at.session_state["ch11_own_result"]
    assert (
        result.run.error is None and result.run.tokens == own.OWN_DEFAULT_TOKENS or result.run.finish_reason
    )
