"""LoadSpec: every load is checked once, when it is made; each setting out of range is refused by name, with
the engine's words, and the CLI's ``bench`` says it in the words of its own flags (exit 2, nothing started)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from triton_kitchen.core.errors import KitchenError
from triton_kitchen.tools.load import (
    MAX_CONCURRENCY,
    MAX_DURATION_S,
    MAX_REQUEST_RATE,
    MAX_REQUESTS,
    LoadSpec,
    LoadSpecError,
)

REFUSED = [
    ({"protocol": "carrier-pigeon"}, "protocol", "unknown protocol 'carrier-pigeon'; choose one of"),
    ({"concurrency": 0}, "concurrency", f"concurrency must be 1..{MAX_CONCURRENCY}"),
    ({"concurrency": MAX_CONCURRENCY + 1}, "concurrency", f"concurrency must be 1..{MAX_CONCURRENCY}"),
    ({"duration_s": 0}, "duration_s", f"duration must be in (0, {MAX_DURATION_S:g}] s"),
    ({"duration_s": MAX_DURATION_S + 1}, "duration_s", f"duration must be in (0, {MAX_DURATION_S:g}] s"),
    ({"request_rate": 0}, "request_rate", f"request rate must be in (0, {MAX_REQUEST_RATE:g}] requests/s"),
    ({"request_rate": MAX_REQUEST_RATE * 2}, "request_rate", "request rate must be in"),
    ({"distribution": "uniform"}, "distribution", "distribution must be one of constant, poisson"),
    ({"max_requests": 0}, "max_requests", "max_requests must be >= 1"),
    ({"compression": "brotli"}, "compression", "compression must be one of"),
    ({"protocol": "grpc-shm", "compression": "gzip"}, "compression", "compression does not apply to shared"),
    ({"timeout_s": 0}, "timeout_s", "timeout must be > 0 s"),
    ({"warmup_s": -1}, "warmup_s", "warm-up and grace must be >= 0 s"),
    ({"grace_s": -0.5}, "grace_s", "warm-up and grace must be >= 0 s"),
]


@pytest.mark.parametrize(("settings", "field", "message"), REFUSED, ids=[f for _, f, _ in REFUSED])
def test_each_setting_out_of_range_is_refused_by_name(settings, field, message):
    with pytest.raises(LoadSpecError) as info:
        LoadSpec("classifier", **settings)
    error = info.value
    assert error.field == field and str(error).startswith(message), (error.field, str(error))
    # one app-wide error (a code for the UI's message table, the words as detail), still a ValueError
    assert isinstance(error, KitchenError) and isinstance(error, ValueError)
    assert error.code == "bad_load" and error.detail == str(error)


def test_a_valid_spec_keeps_its_settings_and_caps_the_requests():
    spec = LoadSpec("classifier", "http-binary", 4, 2.0, request_rate=50, distribution="poisson")
    assert (spec.protocol, spec.concurrency, spec.duration_s, spec.request_rate) == (
        "http-binary",
        4,
        2.0,
        50,
    )
    assert LoadSpec("m", max_requests=None).max_requests == MAX_REQUESTS
    assert LoadSpec("m", max_requests=MAX_REQUESTS * 10).max_requests == MAX_REQUESTS
    assert LoadSpec("m").max_requests == 10_000 and LoadSpec("m").count_wire is False
    # a changed copy is checked again
    with pytest.raises(LoadSpecError) as info:
        replace(spec, concurrency=MAX_CONCURRENCY + 1)
    assert info.value.field == "concurrency"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--concurrency", "17"], f"error: --concurrency must be 1..{MAX_CONCURRENCY}"),
        (["--duration", "0"], f"error: --duration must be in (0, {MAX_DURATION_S:g}]"),
        (["--request-rate", "0"], f"error: --request-rate must be in (0, {MAX_REQUEST_RATE:g}]"),
        (["--max-windows", "0"], "error: --max-windows must be at least 1"),
        (["--max-requests", "0"], "error: max_requests must be >= 1"),
    ],
)
def test_cli_bench_refuses_a_setting_in_the_words_of_its_flag(flags, message, capsys):
    from triton_kitchen.cli.main import main

    assert main(["bench", "--model", "m", "--protocol", "grpc", *flags]) == 2  # before any server starts
    assert capsys.readouterr().err.strip() == message
