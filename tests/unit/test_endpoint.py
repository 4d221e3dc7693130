"""Addresses as a teacher types them: a host alone means Triton's own port for that protocol."""

from __future__ import annotations

import pytest

from triton_kitchen.core.endpoint import Endpoint, with_port


@pytest.mark.parametrize(
    "typed, kind, address",
    [
        ("gpu-box", "metrics", "gpu-box:8002"),
        ("gpu-box", "http", "gpu-box:8000"),
        ("gpu-box", "grpc", "gpu-box:8001"),
        ("http://gpu-box/", "metrics", "gpu-box:8002"),  # pasted from a browser
        ("gpu-box:9102", "metrics", "gpu-box:9102"),
        ("http://10.0.0.7:18002/metrics", "metrics", "10.0.0.7:18002"),
        ("[::1]", "http", "[::1]:8000"),
        ("[::1]:18000", "http", "[::1]:18000"),
        ("  ", "metrics", ""),
    ],
)
def test_a_host_without_a_port_gets_tritons_own(typed, kind, address):
    assert with_port(typed, kind) == address


def test_a_remote_endpoint_fills_in_the_ports_it_was_not_given():
    ep = Endpoint.remote("gpu-box", "", "gpu-box")
    assert (ep.http_url, ep.grpc_url, ep.metrics_url) == ("gpu-box:8000", "gpu-box:8001", "gpu-box:8002")
    assert Endpoint.remote("", "gpu-box:9001").http_url == "gpu-box:8000"
    assert Endpoint.remote("gpu-box:9000").metrics_url is None  # metrics.address_of: the HTTP host's 8002
    assert (Endpoint.remote("[::1]").grpc_url, Endpoint.remote("", "[::1]").http_url) == (
        "[::1]:8001",
        "[::1]:8000",
    )
    assert Endpoint.remote("  ", "gpu-box").http_url == "gpu-box:8000"  # a blank field is not an address


def _connect_to_a_host_alone():
    import streamlit as st

    from ui import server_choice

    server_choice.use_remote("gpu-box", "gpu-box", "http://gpu-box/")
    st.write(repr((server_choice.remote_urls(), server_choice.remote_metrics_url())))


@pytest.mark.app
def test_the_sidebar_form_keeps_a_host_alone_on_tritons_ports():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_connect_to_a_host_alone, default_timeout=30)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.markdown[0].value == repr((("gpu-box:8000", "gpu-box:8001"), "gpu-box:8002"))
