"""What a newcomer sees on screen: labels, figures, waits and both languages of each page; each check here
failed on the code before its fix.

Pages run through AppTest against the session's real embedded server (as a remote, or as the app's
own embedded server); figures and helpers are checked directly.

The tests of this topic that need no server, app or browser: tests/unit/test_ui_polish.py."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path
from types import SimpleNamespace

import conftest
import pytest
from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import lessons
from triton_kitchen.core.endpoint import DEFAULT_PORTS
from triton_kitchen.labs import batching as Bt
from triton_kitchen.tools import batch_runs, bench
from ui.sidebar import HARMLESS_WITHOUT_GPU

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 60
SNAKE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")


def tz(key: str, **kw) -> str:
    return lessons.t(key, "zh", **kw)


def page(path: str | None, lang: str = "zh", state: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    for k, v in (state or {}).items():
        at.session_state[k] = v
    if path:
        switch_page(at, path)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def frames(at: AppTest) -> list:
    """Every dataframe shown, with its column labels and its column config (the formats)."""
    out = []
    for df in at.dataframe:
        cfg = json.loads(df.proto.columns) if df.proto.columns else {}
        out.append(SimpleNamespace(value=df.value, config=cfg, placeholder=df.proto.placeholder))
    return out


def assert_human_table(table) -> None:
    for col in table.value.columns:
        assert col and not SNAKE.match(str(col)), f"raw column name {col!r}"
    assert table.placeholder == "—"  # a missing value is not shown as "None"
    for col in table.value.columns:
        if table.value[col].dtype.kind in "if":
            fmt = (table.config.get(f"col:name:{col}") or table.config.get(col) or {}).get("type_config", {})
            assert "," in str(fmt.get("format", "")), f"{col}: no thousands separator ({fmt})"


def test_batch_histogram_counts_the_measured_window_only(server, monkeypatch):
    """The histogram and the table count the same window: images executed ≈ requests answered (a
    few in flight at each edge), not the warm-up's executions on top."""
    # The warm-up is longer than the window, so counting it would add more than the whole window's
    # requests: the test can fail on a loaded machine too (CI once measured 10 requests/s, where a
    # 1 s warm-up added no more than the slack). The slack is a few requests in flight at each edge
    # plus a tenth of the window, as the statistics are read on timers beside the bench's own clock.
    monkeypatch.setattr(batch_runs, "WARMUP_S", 3.0)
    result = Bt.compare_batching(
        server.endpoint, batch_runs.BatchingSettings(True, 2000, [], 1), concurrency=4, duration_s=2.0
    )
    for r in (result["off"], result["on"]):
        assert r.requests >= 8 and r.errors == 0
        images = sum(size * n for size, n in r.batch_histogram.items())
        warmup = r.throughput_rps * batch_runs.WARMUP_S  # what the warm-up would add to the histogram
        slack = max(2 * r.concurrency + 2, 0.1 * r.requests)
        assert abs(images - r.requests) <= slack < warmup, (images, r.requests, warmup)
    assert set(result["off"].batch_histogram) == {1}


def _result(rps_off: float, rps_on: float) -> dict:
    lat = {"p50": 30.0, "p90": 40.0, "p99": 50.0}
    off = batch_runs.ExperimentResult(batch_runs.BatchingSettings(False), 8, rps_off, lat, 100, 0, {1: 100})
    on = batch_runs.ExperimentResult(
        batch_runs.BatchingSettings(True, 2000, [], 1),
        8,
        rps_on,
        {"p50": 33.0, "p90": 45.0, "p99": None},
        90,
        0,
        {1: 10, 4: 20},
    )
    return {
        "off": off,
        "on": on,
        "throughput_ratio": rps_on / rps_off,
        "p99_ratio": None,
        "concurrency": 8,
        "duration_s": 3.0,
        "protocol": "grpc",
    }


@pytest.mark.app
def test_batching_lab_explains_a_slowdown_in_the_readers_language(embedded):
    import os

    at = page("views/lab_batching.py", state={"batch_result": _result(32.3, 29.0)})
    assert at.multiselect(key="batch_preferred").value == []
    assert at.multiselect(key="batch_preferred").proto.placeholder == tz("lab_batching.preferred_none")
    infos = [i.value for i in at.info]
    assert tz("lab_batching.slower_cpu", ratio=29.0 / 32.3, cores=os.cpu_count() or 1) in infos
    # the histogram's images against the table's requests, warm-up left out
    assert tz(
        "lab_batching.hist_caption",
        c=8,
        s=3.0,
        w=batch_runs.WARMUP_S,
        off_images=100,
        on_images=90,
        off_requests=100,
        on_requests=90,
    ) in [c.value for c in at.caption]
    (table,) = frames(at)
    assert_human_table(table)
    settings = list(table.value[tz("lab_batching.col_setting")])
    assert settings == [
        tz("lab_batching.setting_off", n=1),
        tz("lab_batching.setting_on", delay=2000, preferred=tz("lab_batching.preferred_none_short"), n=1),
    ]
    assert not any("instance" in s or "delay" in s for s in settings)
    # no explanation when batching helped
    at = page("views/lab_batching.py", state={"batch_result": _result(30.0, 60.0)})
    assert not [i for i in at.info if "×" in i.value]


@pytest.mark.app
def test_batching_lab_slowdown_on_a_remote_server(remote):
    at = page("views/lab_batching.py", "en", state={"batch_result": _result(32.3, 29.0)})
    assert lessons.t("lab_batching.slower_remote", "en", ratio=29.0 / 32.3) in [i.value for i in at.info]


# -- protocol lab tables and progress bars ------------------------------------------------
def _bench(protocol: str, rps: float, p50: float | None) -> bench.BenchResult:
    lat = {"p50": p50, "p90": p50, "p99": p50}
    return bench.BenchResult(protocol, "image_classifier", 4, 57, 0, rps, lat, 1_452_444, 4_000, None, None)


@pytest.mark.app
def test_protocol_lab_tables_are_for_people(remote):
    results = [
        _bench("http-json", 18.9989, 59.7),
        _bench("http-binary", 34.6543, 34.97),
        _bench("grpc", 0.0, None),
    ]
    at = page("views/lab_protocols.py", state={"proto_load": results, "proto_sweep": results})
    tables = frames(at)
    assert len(tables) == 2
    for table in tables:
        assert_human_table(table)
        assert list(table.value[tz("lab_protocols.col_protocol")]) == ["HTTP-JSON", "HTTP-二进制", "gRPC"]
        assert len(table.value.columns) <= 8  # fits the page: the rest is in the downloads
    fmt = tables[0].config
    assert any("%,.1f" in json.dumps(v) for v in fmt.values())  # one number of decimals per column


@pytest.mark.app
def test_protocol_lab_progress_bars_say_their_protocol(remote):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "zh"
    switch_page(at, "views/lab_protocols.py")
    at.run()
    at.slider(key="proto_load_d").set_value(1)
    at.slider(key="proto_load_c").set_value(1)
    at.button(key="proto_load_run").click().run()
    assert not at.exception
    bars = [p.proto.text for p in at.get("progress")]
    assert len(bars) == 3
    for bar, name in zip(bars, ["HTTP-JSON", "HTTP-二进制", "gRPC"], strict=True):
        assert bar.startswith(name + " · "), bars
    assert_human_table(frames(at)[0])


@pytest.mark.app
def test_protocol_lab_draws_only_its_open_tab(remote):
    """A fresh protocol lab draws one tab's widgets, not all five's; the tab the reader left open is the one drawn.
    Fails if the tabs go back to plain ``st.tabs``, which draw every tab's widgets on the first paint."""
    from ui import boxes

    runs = {"proto_bytes_run", "proto_load_run", "proto_sweep_run", "proto_check_run", "proto_stream_run"}
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    switch_page(at, "views/lab_protocols.py", open_boxes=False).run()
    assert not at.exception
    keys = {b.key for b in at.button}
    assert keys & runs == {"proto_bytes_run"} and "proto_stop" in keys, keys
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = "en"
    at.session_state[boxes.OPEN_TABS] = {"proto_tabs": "load"}
    switch_page(at, "views/lab_protocols.py", open_boxes=False).run()
    assert {b.key for b in at.button} & runs == {"proto_load_run"}
    assert at.slider(key="proto_load_c").value == 4


@pytest.mark.app
def test_sidebar_log_wraps_and_explains_the_cuda_lines(embedded):
    at = page(None, state={"tk_log_open": True})
    logs = [c for c in at.sidebar.code]
    assert logs and all(c.proto.wrap_lines for c in logs)  # no sideways scrolling line by line
    assert "CUDA driver version is insufficient" not in logs[0].value
    notes = " ".join(c.value for c in at.sidebar.caption)
    assert "NVIDIA GPU" in notes  # the server here has no GPU: its CUDA lines were hidden, and it says why
    hidden = logs[0].value.splitlines()
    at.toggle(key="tk_log_hide_gpu").set_value(False).run()
    shown = at.sidebar.code[0].value.splitlines()
    # the tail with the GPU lines: those lines come back (the start-up CUDA lines, while the log is short; on a
    # server that has answered many requests they have left the tail, and the two tails end alike)
    assert any(HARMLESS_WITHOUT_GPU.search(line) for line in shown) or shown[-5:] == hidden[-5:]
    assert tz("sidebar.log_gpu_shown") in [c.value for c in at.sidebar.caption]


@pytest.mark.app
def test_moved_ports_are_a_warning(embedded, monkeypatch):
    from ui.sidebar import moved_ports

    assert moved_ports(embedded) == {}  # the tests asked for free ports, not 8000
    at = page(None)
    assert not at.sidebar.warning
    monkeypatch.setattr(embedded, "requested_ports", dict(DEFAULT_PORTS))  # as the app asks
    assert set(moved_ports(embedded)) == {"http", "grpc", "metrics"}
    at = page(None)
    warnings = [w.value for w in at.sidebar.warning]
    assert any("8000" in w and embedded.http_url in w and "localhost:8000" in w for w in warnings), warnings


def _no_embedded_advice(at: AppTest) -> None:
    errors = [e.value for e in at.error]
    assert errors
    for text in errors:
        assert "重启内置" not in text and "restart the embedded" not in text.lower(), text


@pytest.mark.app
def test_dead_remote_gives_remote_advice(server, monkeypatch):
    from triton_kitchen.core.server import free_port

    url = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv("TRITON_HTTP_URL", url)
    monkeypatch.setenv("TRITON_GRPC_URL", url)
    at = page("views/lab_protocols.py")
    assert tz("server.down_remote", url=url) in [e.value for e in at.error]
    _no_embedded_advice(at)
    at = page("views/ch4_http.py", "en")
    _no_embedded_advice(at)


@pytest.mark.app
def test_empty_remote_address_says_so():
    state = {"tk_server_mode": "remote", "tk_remote": ("", "")}
    at = page("views/lab_batching.py", state=state)
    errors = [e.value for e in at.error]
    assert tz("server.empty_url") in errors
    assert [e.value for e in at.sidebar.error] == [tz("server.empty_url")]
    assert not any(e.startswith(" 上没有") or "上没有 Triton" in e for e in errors)


@pytest.mark.app
@pytest.mark.timing
def test_pages_stay_fast_while_the_remote_hangs(monkeypatch):
    """A remote that accepts connections and never answers: the first run waits for the probe once;
    later runs do not wait again (before the fix every page waited 5-6 s)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # the kernel completes the handshakes; nobody ever reads or answers
    url = f"127.0.0.1:{silent.getsockname()[1]}"
    monkeypatch.setenv("TRITON_HTTP_URL", url)
    monkeypatch.setenv("TRITON_GRPC_URL", url)
    try:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        switch_page(at, "views/ch4_http.py")
        t0 = time.perf_counter()
        at.run()
        first = time.perf_counter() - t0
        assert not at.exception
        from ui import server as ui_server

        time.sleep(
            ui_server.DEAD_PROBE_TTL_S + 0.5
        )  # the "no" is old now: it is asked again, in the background
        for _ in range(2):
            t0 = time.perf_counter()
            at.run()
            again = time.perf_counter() - t0
            assert again < 0.6, (first, again)
        assert at.sidebar.error
    finally:
        silent.close()


@pytest.mark.app
def test_flow_lab_page_names_and_words(remote):
    at = page("views/lab_flow.py")
    assert at.title[0].value.startswith(tz("page.lab_flow"))
    text = " ".join([at.title[0].value, *(c.value for c in at.caption), *(s.label for s in at.selectbox)])
    assert "集成模型" not in text
    assert not any("集成模型" in v for v in lessons.ui_strings("zh").values() if v)
    # a server answers: nothing drawn until the reader sends (no recording that could pass for their request)
    invitation = tz("lab_flow.send_first", send=tz("lab_flow.send"))
    assert not at.get("plotly_chart") and invitation in [i.value for i in at.info]
    at.button(key="flow_send").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    charts = at.get("plotly_chart")
    assert len(charts) == 2 and invitation not in [i.value for i in at.info]
    for chart in charts:
        assert json.loads(chart.proto.config).get("displayModeBar") is False  # no toolbar over the title


@pytest.mark.app
def test_diagrams_are_full_width(remote):
    at = page("views/ch3_multi_model.py")
    charts = at.get("graphviz_chart")
    assert charts
    at = page("views/ch2_ensemble_config.py")
    # the editor's DAG is not inside the editor's two columns any more
    cols = at.columns
    inside = [g for c in cols for g in c.get("graphviz_chart")]
    assert at.get("graphviz_chart") and not inside


@pytest.mark.app
def test_rendered_metrics_have_no_arrow(remote):
    at = page("views/ch8_mistakes.py")
    deltas = [m for m in at.metric if m.proto.delta]
    assert deltas
    assert all(m.proto.direction == m.proto.MetricDirection.NONE for m in deltas)


# -- ch4 labels, ch5 tables ----------------------------------------------------------------------------
@pytest.mark.app
def test_ch4_json_tab_says_body_not_header(remote):
    at = page("views/ch4_http.py")
    md = [m.value for m in at.markdown]
    assert any(v.startswith("**" + tz("ch4.json_body", n=0).split("：")[0]) for v in md)
    assert sum(v.startswith("**JSON 头部") for v in md) == 1  # the binary tab's header only
    assert any(re.search(r"\d,\d{3} 字节", v) for v in md)  # thousands separators


@pytest.mark.app
def test_ch5_tables_use_thousands_separators(remote):
    at = page("views/ch5_grpc.py")
    for table in frames(at):
        for col in table.value.columns:
            if table.value[col].dtype.kind == "i" and table.value[col].max() >= 1000:
                fmt = json.dumps(table.config.get(f"col:name:{col}") or table.config.get(col) or {})
                assert "%,d" in fmt, (col, fmt)


# -- names, /home, Streamlit's own strings ----------------------------------------------------
@pytest.mark.app
def test_grpc_is_written_grpc(remote):
    at = page("views/ch1_inference_server.py")
    radio = at.radio(key="ch1_protocol")
    assert [radio.format_func(o) for o in radio.options] == ["gRPC", "HTTP"]
    at.button(key="ch1_classify").click().run()
    assert any("gRPC" in c.value for c in at.caption)
    assert not any("GRPC" in c.value for c in at.caption)
    at = page("views/ch7_python_client.py")
    at.button(key="ch7_run").click().run()
    assert any(m.value.startswith("#### gRPC") for m in at.markdown)


@pytest.mark.browser
@pytest.mark.browser
@pytest.mark.skipif(not Path(conftest.CHROMIUM).exists(), reason="Debian's chromium is not installed")
def test_home_url_shows_the_welcome_page(app_url, browser):
    """/home was declared (url_path="home") but Streamlit served that page at / only: "Page not found"."""
    url = app_url
    page = browser.new_page()
    for path in ("/home?lang=zh", "/?lang=zh"):
        page.goto(url + path)
        page.wait_for_selector("h1", timeout=60_000)
        page.wait_for_timeout(1500)  # the "Page not found" dialog comes after the first paint
        assert page.get_by_text("Page not found").count() == 0, path
        assert page.locator("h1").first.inner_text().strip() == tz("app.title")
    page.close()


@pytest.mark.app
@pytest.mark.parametrize(
    "path",
    [
        "views/lab_protocols.py",
        "views/lab_flow.py",
        "views/ch7_python_client.py",
        "views/ch1_inference_server.py",
    ],
)
def test_choosers_have_a_translated_placeholder(remote, path):
    at = page(path)
    widgets = list(at.selectbox) + list(at.multiselect)
    assert widgets
    for w in widgets:
        assert w.proto.placeholder and w.proto.placeholder not in ("Choose an option", "Choose options"), (
            w.label
        )
