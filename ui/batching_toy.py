"""Chapter 1's batching toy: the simulator with sliders, before any measurement; and chapter 9's drawn timelines
(the same simulator with a priority lane and a bounded queue: ``queue_timeline``). UI only."""

from __future__ import annotations

from fractions import Fraction

import streamlit as st

from triton_kitchen.core import catalog
from triton_kitchen.labs import queue_toy
from triton_kitchen.tools import calibration, sim_figures, simulator
from ui import boxes, errors, predict, server
from ui.i18n import lang, t

ILLUSTRATIVE = simulator.ServiceModel(
    {1: 10.0, 8: 24.0}, outside_ms=2.0, client_parallelism=1, outside_jitter=0.5
)
CASES = {
    "off": simulator.BatcherConfig(dynamic_batching=False),
    "on": simulator.BatcherConfig(),
    "delay": simulator.BatcherConfig(max_queue_delay_us=int(simulator.GUIDE_X_MS / 2 * 1000)),
    "two": simulator.BatcherConfig(dynamic_batching=False, instances=2),
    "two_on": simulator.BatcherConfig(instances=2),
}
CALIBRATION = "toy_calibration"
STREAM_REQUESTS = 3000


def _in_x(ms: float) -> str:
    """5.0 -> '5X', 2.333 -> '7/3 X': the guide's own way of writing it."""
    frac = Fraction(ms / simulator.GUIDE_X_MS).limit_denominator(12)
    return f"{frac.numerator}X" if frac.denominator == 1 else f"{frac.numerator}/{frac.denominator} X"


def _guide() -> None:
    st.caption(t("toy.guide_note"))
    labels = {c: t(f"toy.case_{c}") for c in CASES}  # bound now: format_func may run outside the script run
    case = st.radio(
        t("toy.case"),
        list(CASES),
        format_func=labels.__getitem__,
        horizontal=True,
        key="toy_case",
        persist_state="session",
    )
    result = simulator.simulate_arrivals(CASES[case], simulator.GUIDE_SERVICE, simulator.GUIDE_ARRIVALS)
    makespan = max(r.end_ms for r in result.requests)
    st.metric(t("toy.makespan"), _in_x(makespan), help=t("toy.makespan_help"))
    fig = sim_figures.timeline(result, lang(), unit_ms=simulator.GUIDE_X_MS, unit="X")
    st.plotly_chart(fig, width="stretch", key="toy_guide_fig")


def _service() -> tuple[simulator.ServiceModel, bool]:
    cal = st.session_state.get(CALIBRATION)
    return (cal.service(), True) if cal is not None else (ILLUSTRATIVE, False)


def _calibrate_button() -> None:
    ep = server.endpoint()
    if not server.run_button(t("toy.calibrate"), key="toy_calibrate", disabled=ep is None):
        return
    with st.spinner(t("toy.calibrating")):
        try:
            cal = server.lab_run(1, lambda: calibration.calibrate(ep, catalog.CLASSIFIER))
        except Exception as exc:  # noqa: BLE001 - a dead server or a refused model: a message, the toy keeps working
            errors.show_error(exc)
            return
    if cal is not server.BUSY:
        st.session_state[CALIBRATION] = cal


def _stream() -> None:
    labels = {a: t(f"toy.{a}") for a in ("closed", "open")}  # ids, not bools: a language switch keeps them
    closed = (
        st.radio(
            t("toy.arrivals"),
            list(labels),
            horizontal=True,
            key="toy_arrivals",
            persist_state="session",
            format_func=labels.get,
        )
        == "closed"
    )
    c1, c2, c3 = st.columns(3)
    if closed:
        concurrency = c1.slider(t("toy.concurrency"), 1, 16, 8, key="toy_c", persist_state="session")
        rate = None
    else:
        rate = c1.slider(t("toy.rate"), 10, 600, 100, step=10, key="toy_rate", persist_state="session")
        concurrency = None
    delay = c2.slider(t("toy.delay"), 0, 20_000, 0, step=500, key="toy_delay", persist_state="session")
    instances = c3.slider(t("toy.instances"), 1, 4, 1, key="toy_instances", persist_state="session")
    c4, c5 = st.columns([2, 1])
    preferred = c4.multiselect(
        t("toy.preferred"),
        list(range(1, 9)),
        default=[],
        key="toy_preferred",
        persist_state="session",
        placeholder=t("widget.choose"),
    )
    on = c5.toggle(t("toy.batching_on"), value=True, key="toy_on", persist_state="session")
    config = simulator.BatcherConfig(
        dynamic_batching=on,
        preferred_batch_sizes=tuple(sorted(preferred)),
        max_queue_delay_us=int(delay),
        instances=int(instances),
    )
    service, calibrated = _service()
    key = "toy.service_calibrated" if calibrated else "toy.service_illustrative"
    st.caption(t(key, one=service.service_ms(1), eight=service.service_ms(8), outside=service.outside_ms))
    _calibrate_button()
    res = simulator.simulate(
        config,
        service,
        concurrency=concurrency,
        rate_rps=rate,
        requests=STREAM_REQUESTS,
        distribution="poisson" if rate else "constant",
    )
    s = res.summary
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(t("toy.throughput"), f"{s['throughput_rps']:,.0f} req/s")
    m2.metric(t("toy.p50"), f"{s['latency_ms']['p50']:,.1f} ms")
    m3.metric(t("toy.p99"), f"{s['latency_ms']['p99']:,.1f} ms")
    m4.metric(t("toy.mean_batch"), f"{s['mean_batch']:.2f}")
    if rate and s["throughput_rps"] < rate * 0.95:
        st.warning(t("toy.saturated"))
    window = 150.0 if service.service_ms(1) < 20 else 600.0
    st.plotly_chart(sim_figures.timeline(res, lang(), until_ms=window), width="stretch", key="toy_stream_fig")
    st.caption(t("toy.timeline_caption", ms=window))
    if concurrency:
        st.info(
            t(
                "toy.queueing",
                queue=s["queue_ms"],
                compute=s["compute_ms"],
                outside=s["outside_ms"],
                rps=s["throughput_rps"],
                c=concurrency,
                cycle=concurrency / s["throughput_rps"] * 1000,
            ),
            icon="🧮",
        )


@st.fragment  # slider moves rerun only the toy
def render() -> None:
    st.subheader(t("toy.title"))
    st.caption(t("toy.caption"))
    labels = {m: t(f"toy.mode_{m}") for m in ("guide", "stream")}
    mode = st.radio(
        t("toy.mode"),
        list(labels),
        horizontal=True,
        key="toy_mode",
        persist_state="session",
        format_func=labels.__getitem__,
    )
    if mode == "guide":
        _guide()
    else:
        _stream()
    with boxes.remembered_expander("toy_why_box", t("toy.why_title")):
        st.markdown(t("toy.why_body"))


# -- chapter 9: the queue's rules, drawn -------------------------------------------------------------------------
def _toy_detail(result: queue_toy.Scenario) -> str:
    """The reveal's line: what the picture shows, in numbers taken from the simulated run."""
    if result.name == "priority":
        ends = {c: f"{max(result.ends(c, queue_toy.URGENT)):g}" for c in result.cases}
        return t("ch9.toy_priority_detail", levels=ends["levels"], fifo=ends["fifo"])
    if result.name == "bounded":
        counts = {c: result.accepted(c, after_ms=0.0) for c in result.cases}
        return t(
            "ch9.toy_bounded_detail",
            one=counts["one"],
            one_refused=20 - counts["one"],
            levels=counts["levels"],
            levels_refused=20 - counts["levels"],
        )
    delayed = result.ends("delay", queue_toy.EARLY)
    return t(
        "ch9.toy_timeout_detail",
        rejected=len(result.refused("reject", queue_toy.EARLY)),
        delay_end=f"{delayed[-1]:g}",
    )


def queue_timeline(name: str) -> None:
    """Chapter 9's drawn timeline ``name`` (``queue_toy.SCENARIOS``): the story, the prediction, and once the
    learner asks for it, the picture of both cases and "your prediction / what happened"."""
    key = f"ch9_toy_{name}"
    st.caption(t(f"ch9.toy_{name}_setup"))
    kwargs = {}
    if name == "timeout":
        lo, hi = queue_toy.STREAM_BATCHES
        kwargs["stream_batches"] = st.slider(
            t("ch9.toy_stream"), lo, hi, 5, key=f"{key}_stream", persist_state="session"
        )
    options = predict.choices(f"ch9.toy_{name}", queue_toy.OPTIONS[name])
    predict.ask(key, t(f"ch9.toy_{name}_predict"), options)
    if st.button(t("ch9.toy_draw"), key=f"{key}_draw"):
        predict.lock(key)
        st.session_state[f"{key}_drawn"] = True
    if not st.session_state.get(f"{key}_drawn"):
        return
    result = queue_toy.SCENARIOS[name](**kwargs)
    cases = [(t(f"ch9.toy_case_{name}_{c}"), r) for c, r in result.cases.items()]
    fig = sim_figures.lanes(
        cases, lang(), queue_toy.MARKS, result.marked, unit_ms=simulator.GUIDE_X_MS, unit="X"
    )
    st.plotly_chart(fig, width="stretch", key=f"{key}_fig")
    st.caption(t("ch9.toy_note"))
    predict.reveal(key, options, result.outcome(), _toy_detail(result))
