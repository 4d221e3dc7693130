"""The doctor's pure parts (the knee, the statistics-delta check, where the time goes, the report card) and its
answers to bad input that needs no Triton: a URL that is not Triton, a server that answers too slowly, a server
that refuses client shared memory (the 26.04 stand-in)."""

from __future__ import annotations

import json
import time
from contextlib import ExitStack

import pytest

from tests._shared.plain_http import plain_http
from tests._shared.shm_refusing_server import DISABLED, MODEL, RefusingServer
from triton_kitchen.cli.main import main
from triton_kitchen.core.lessons import t, ui_strings
from triton_kitchen.tools.doctor import run_doctor
from triton_kitchen.tools.doctor_card import (
    PARTS,
    STATS_MISSING,
    STATS_NONE,
    STATS_OTHER_CLIENT,
    STATS_OURS,
    Cell,
    card,
    check_delta,
    find_knee,
    search_knee,
    targets,
)
from triton_kitchen.tools.doctor_parts import trace_split


# -- the knee ---------------------------------------------------------------------------------------------------
def test_knee_is_where_doubling_stops_paying():
    assert find_knee([(1, 10.0), (2, 19.0), (4, 30.0), (8, 31.0), (16, 30.0)]) == 4
    assert find_knee([(1, 10.0), (2, 10.5)]) == 1  # saturated at once
    assert find_knee([(1, 10.0), (2, 20.0), (4, 40.0)]) == 4  # still growing: the highest measured
    assert find_knee([(4, 30.0), (1, 10.0), (2, 19.0)]) == 4  # order does not matter


def test_knee_search_stops_at_the_first_small_gain_and_at_the_cap():
    asked: list[int] = []

    def curve(c: int) -> float:
        asked.append(c)
        return min(c, 4) * 10.0  # saturates at 4

    knee, points = search_knee(curve, max_concurrency=16)
    assert knee == 4 and asked == [1, 2, 4, 8]  # 8 gains nothing: stop, 16 never measured
    assert points == [(1, 10.0), (2, 20.0), (4, 40.0), (8, 40.0)]
    asked.clear()
    knee, _ = search_knee(lambda c: asked.append(c) or c * 10.0, max_concurrency=2)
    assert knee == 2 and asked == [1, 2]
    asked.clear()
    knee, _ = search_knee(lambda c: asked.append(c) or 0.0)  # nothing answers: one try
    assert knee == 1 and asked == [1]


# -- the statistics-delta check ---------------------------------------------------------------------------------
def test_statistics_delta_must_count_exactly_the_doctors_requests():
    assert check_delta(40, 0, 40, 0) == STATS_OURS
    assert check_delta(40, 2, 40, 2) == STATS_OURS
    assert check_delta(40, 0, 57, 0) == STATS_OTHER_CLIENT  # someone else's requests in the window
    assert check_delta(40, 0, 40, 3) == STATS_OTHER_CLIENT  # someone else's failures
    assert check_delta(40, 0, 38, 0) == STATS_MISSING  # not all counted yet
    assert check_delta(40, 0, None, None) == STATS_NONE


# -- where the time goes ----------------------------------------------------------------------------------------
def _cell(protocol="grpc", concurrency=1, e2e=20.0, **parts) -> Cell:
    cell = Cell(protocol, concurrency, requests=100, e2e_ms=e2e, throughput_rps=50.0)
    cell.parts_ms = {p: parts.get(p) for p in PARTS if p != "unexplained"}
    cell.settle()
    return cell


def test_unexplained_is_what_no_part_accounts_for():
    cell = _cell(e2e=20.0, serialize=1.0, wire=2.0, frontend=0.5, queue=1.5, compute=13.0, deserialize=0.5)
    assert cell.parts_ms["unexplained"] == pytest.approx(1.5)
    assert cell.unexplained_share() == pytest.approx(0.075)
    assert cell.biggest() == "compute" and cell.advice() == "advice_compute"
    # a part not measured (None) is not counted: its time shows up as unexplained
    cell = _cell(e2e=20.0, serialize=1.0, wire=2.0, compute=13.0)
    assert cell.parts_ms["unexplained"] == pytest.approx(4.0)
    assert Cell("grpc", 1).unexplained_share() is None  # nothing measured


@pytest.mark.parametrize(
    ("protocol", "concurrency", "parts", "advice"),
    [
        ("http-json", 1, {"serialize": 50.0, "compute": 10.0}, "advice_binary"),
        ("http-json", 1, {"frontend": 50.0, "compute": 10.0}, "advice_binary"),
        ("grpc", 1, {"wire": 50.0, "compute": 10.0}, "advice_shm"),
        ("grpc-shm", 1, {"wire": 50.0, "compute": 10.0}, "advice_smaller"),
        ("http-binary", 1, {"frontend": 50.0}, "advice_grpc"),
        ("grpc", 8, {"queue": 50.0, "compute": 10.0}, "advice_instances"),
        ("grpc", 1, {"queue": 50.0, "compute": 10.0}, "advice_batching_delay"),
        ("grpc", 1, {"serialize": 50.0, "compute": 10.0}, "advice_reuse"),
    ],
)
def test_the_advice_follows_the_costliest_part(protocol, concurrency, parts, advice):
    cell = _cell(protocol, concurrency, e2e=sum(parts.values()), **parts)
    assert cell.advice() == advice
    assert t(f"doctor.{advice}", "zh") != f"doctor.{advice}"


def test_unexplained_that_dominates_points_at_the_client():
    cell = _cell(e2e=100.0, compute=10.0)
    assert cell.biggest() == "unexplained" and cell.advice() == "advice_unexplained"


def test_targets_count_cells_and_perf_analyzer():
    good = _cell(e2e=20.0, compute=19.0)
    bad = _cell(e2e=20.0, compute=10.0)
    good.perf_analyzer_rps, bad.perf_analyzer_rps = 52.0, 40.0  # 50 vs 52: -4 %; 50 vs 40: +25 %
    out = targets([good, bad, Cell("grpc", 2)])
    assert out["cells_measured"] == 2 and out["cells_unexplained_within"] == 1 and not out["unexplained_met"]
    assert out["perf_analyzer_checked"] == 2 and out["perf_analyzer_within"] == 1
    assert not out["perf_analyzer_met"]
    assert targets([good])["unexplained_met"] and targets([good])["perf_analyzer_met"]
    # interleaved with perf_analyzer, the engine's own slices are what is compared
    bad.engine_rps = 41.0
    assert bad.pa_difference() == pytest.approx(0.025)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_difference_whose_own_slices_spread_wider_than_the_tolerance_is_called_noisy(lang):
    cell = _cell(e2e=20.0, compute=19.0)
    cell.engine_rps, cell.perf_analyzer_rps = 12.0, 10.0  # +20 %
    cell.pa_rounds = [[10.0, 10.0], [14.0, 10.0], [12.0, 10.5]]  # slices 0 %, +40 %, +14 %: half-range 20 %
    assert cell.pa_round_differences() == pytest.approx([0.0, 0.4, 12 / 10.5 - 1])
    assert cell.pa_noisy()
    out = targets([cell])
    assert (
        out["perf_analyzer_within"] == 0 and out["perf_analyzer_noisy"] == 1 and not out["perf_analyzer_met"]
    )
    text = card({"url": "x:1", "cells": [cell.to_json()]}, lang)
    assert t("doctor.pa_rounds", lang, low="+0", high="+40") in text and t("doctor.pa_noisy", lang) in text
    cell.pa_rounds = [[12.0, 10.0], [12.5, 10.0], [11.8, 10.0]]  # steady slices: +20 % is a real difference
    assert not cell.pa_noisy() and targets([cell])["perf_analyzer_noisy"] == 0
    assert t("doctor.pa_noisy", lang) not in card({"url": "x:1", "cells": [cell.to_json()]}, lang)


def test_trace_split_adds_up_to_the_clients_latency():
    ts = {
        "HTTP_RECV_START": 1_100_000,
        "HTTP_RECV_END": 1_800_000,
        "REQUEST_START": 2_000_000,
        "REQUEST_END": 12_000_000,
        "HTTP_SEND_START": 12_300_000,
        "HTTP_SEND_END": 12_400_000,
    }
    split = trace_split(ts, client_start=1_000_000, client_end=13_000_000)
    assert split["wire"] == pytest.approx(0.8 + 0.7)  # send .. received, answer sent .. client has it
    assert split["frontend"] == pytest.approx(0.2 + 0.3)
    assert split["wire"] + split["frontend"] + 10.0 == pytest.approx(12.0)  # + REQUEST_START..END
    # gRPC starts sending before REQUEST_END: the overlap is not counted twice
    grpc_ts = {"GRPC_WAITREAD_END": 1_500_000, "REQUEST_START": 1_600_000, "REQUEST_END": 9_000_000,
               "GRPC_SEND_START": 8_800_000}  # fmt: skip
    split = trace_split(grpc_ts, 1_000_000, 9_500_000)
    assert split["wire"] == pytest.approx(0.5 + 0.5) and split["frontend"] == pytest.approx(0.1)
    assert trace_split({"REQUEST_START": 1}, 0, 2) is None


# -- the report card --------------------------------------------------------------------------------------------
def _report() -> dict:
    cells = [
        _cell("http-json", 1, e2e=100.0, serialize=60.0, wire=2.0, frontend=20.0, queue=1.0, compute=15.0,
              deserialize=0.5),
        _cell("grpc", 4, e2e=30.0, serialize=0.3, wire=1.0, frontend=0.1, queue=12.0, compute=15.0,
              deserialize=0.1),
        Cell("grpc-shm", 4, notes=["budget"]),
    ]  # fmt: skip
    cells[1].perf_analyzer_rps = 48.0
    return {
        "ok": True,
        "url": "gpu-box:8000",
        "server": {
            "version": "2.68",
            "release": "26.04",
            "models": ["classifier"],
            "extensions": ["statistics"],
            "client_shm": "refused",
        },  # fmt: skip
        "model": "classifier",
        "knee": {"concurrency": 4},
        "cells": [c.to_json() for c in cells],
        "not_measured": [
            {"key": "shm_refused_note", "params": {"message": DISABLED}},
            {"key": "budget", "params": {"protocol": "grpc-shm", "concurrency": 4}},
        ],  # fmt: skip
    }


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_card_says_where_the_time_goes_and_what_to_change(lang):
    text = card(_report(), lang)
    assert "doctor." not in text  # every key exists in this language
    assert "2.68" in text and "26.04" in text and "classifier" in text
    assert t("doctor.shm_refused", lang) in text
    lines = text.splitlines()
    json_line = next(i for i, line in enumerate(lines) if "http-json ×1" in line)
    assert "100.00 ms" in lines[json_line] and f"{t('doctor.part_serialize', lang)} 60%" in lines[json_line]
    assert t("doctor.advice_binary", lang) in lines[json_line + 1]  # its advice on the next line
    grpc_line = next(i for i, line in enumerate(lines) if "grpc ×4" in line)
    assert t("doctor.pa_diff", lang, diff="+4") in lines[grpc_line]  # 50 vs 48 req/s
    assert t("doctor.advice_compute", lang) in lines[grpc_line + 1]
    assert t("doctor.cell_unmeasured", lang, protocol="grpc-shm", concurrency=4) in text
    assert t("doctor.not_measured_head", lang) in text and DISABLED in text


def test_every_doctor_key_exists_in_both_languages_with_the_same_fields():
    from triton_kitchen.core.lessons import placeholders

    zh = {k: v for k, v in ui_strings("zh").items() if k.startswith("doctor.")}
    en = {k: v for k, v in ui_strings("en").items() if k.startswith("doctor.")}
    assert zh.keys() == en.keys() and len(zh) > 40
    for key in zh:
        assert placeholders(zh[key]) == placeholders(en[key]), key


# -- bad input --------------------------------------------------------------------------------------------------
@pytest.fixture
def plain_server():
    with ExitStack() as stack:
        yield lambda delay_s=0.0: stack.enter_context(plain_http(delay_s))


def test_a_url_that_is_not_triton_is_said_so(plain_server, capsys):
    url = plain_server()
    assert main(["doctor", "--url", url, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["ok"] and report["error"]["key"] == "not_triton" and report["cells"] == []
    assert main(["doctor", "--url", url, "--lang", "zh"]) == 1
    text = capsys.readouterr().out
    assert "不是 Triton 的 HTTP API" in text and "404" in text


def test_a_slow_server_is_said_so_within_its_timeout(plain_server):
    url = plain_server(delay_s=3.0)
    t0 = time.perf_counter()
    report = run_doctor(url, timeout_s=0.5)
    assert report["error"]["key"] == "slow_server" and time.perf_counter() - t0 < 3.0
    assert "0.5 s" in card(report, "en")


def test_nothing_listening_is_said_so():
    from triton_kitchen.core.server import free_port

    report = run_doctor(f"127.0.0.1:{free_port()}", timeout_s=1.0)
    assert report["error"]["key"] == "not_reachable"


def test_a_server_that_refuses_client_shared_memory(capsys):
    with RefusingServer() as srv:
        code = main(["doctor", "--url", srv.http_url, "--grpc-url", srv.grpc_url, "--model", MODEL, "--quick",
                     "--json", "--budget", "10", "--timeout", "2"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and not report["ok"]
    assert report["server"]["version"] == "2.68" and report["server"]["client_shm"] == "refused"
    assert DISABLED in report["server"]["shm_message"]
    keys = [n["key"] for n in report["not_measured"]]
    assert "shm_refused_note" in keys
    assert "no_statistics" in keys  # the stand-in has no statistics API: queue and compute cannot be measured
    failed = {n["params"]["protocol"] for n in report["not_measured"] if n["key"] == "protocol_failed"}
    assert failed == {"http-json", "http-binary", "grpc"}  # --grpc-url taken: it answers as Triton's gRPC
    assert report["error"]["key"] == "model_unusable"  # and it runs no inference
    assert "http-shm" not in report.get("protocols", [])
    text = card(report, "zh")
    assert t("doctor.shm_refused", "zh") in text and DISABLED in text
