"""One request seen from inside an ensemble, on its DAG: the outputs to request (the steps they do
not need greyed, then confirmed by the server's statistics), a photo or a text file as input (a failing step in
red with Triton's message), and the steps coloured by queue or compute time (one request or the median of the
last N). The flow lab and chapters 2 and 3 call :func:`inside_view`; the work is
:mod:`triton_kitchen.labs.inside_dag`'s."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.core import catalog, lessons
from triton_kitchen.core.ensemble import Dag
from triton_kitchen.labs import inside_dag
from triton_kitchen.tools import inside
from ui import errors, i18n, present, server
from ui.i18n import t
from ui.lesson import lazy_box

HISTORY = 20  # reports kept per model and set of outputs
SEND_N = 5


@st.cache_resource(show_spinner=False, max_entries=16)  # a Dag holds protobuf configs: not pickled
def _dag(model: str, stamp: tuple) -> Dag:
    return inside_dag.repository_dag(model)


def _labeller(prefix: str):
    """A widget's format_func fixed to this run's language (AppTest calls it outside the run)."""
    language = i18n.lang()
    return lambda option: lessons.t(prefix + option, language)


def _history(key: str) -> list:
    return st.session_state.setdefault(key, [])


def _evidence_words(report: inside.InsideReport) -> tuple[str, str]:
    used = report.evidence.get("failed_step") or []
    words = t("inside.list_sep").join(t(f"inside.evidence_{e}") for e in used) or t("inside.none")
    return words, t(f"inside.evidence_{report.evidence.get('ran', 'statistics')}")


def inside_view(
    model: str, key: str, image: bytes | None, protocol: str | None = None, titled: bool = True
) -> None:
    """The whole box for ``model`` (an ensemble of the repository); ``key`` keeps its widgets apart from the
    page's others; ``image`` is the page's photo; ``protocol`` fixed by the page, or chosen here when None;
    ``titled=False`` when the page's box already carries the title."""
    dag = _dag(model, catalog.fingerprint())
    if titled:
        st.markdown(f"**{t('inside.title')}**")
    st.caption(t("inside.intro"))
    st.markdown(t("inside.outputs"))
    cols = st.columns(len(dag.outputs))
    outputs = [
        o
        for col, o in zip(cols, dag.outputs, strict=True)
        if col.checkbox(o, value=True, key=f"{key}_o_{model}_{o}", persist_state="session")
    ]
    c1, c2, c3 = st.columns([2, 1, 2])
    sources = ["photo", "text"] if inside_dag.takes_bytes(dag) else ["photo"]
    source = c1.radio(
        t("inside.input"), sources, horizontal=True, key=f"{key}_src_{model}", persist_state="session",
        format_func=_labeller("inside.input_"),
    )  # fmt: skip
    if protocol is None:
        protocol = c2.radio(
            t("inside.protocol"), ["grpc", "http"], horizontal=True, key=f"{key}_proto", persist_state="session",
            format_func=i18n.protocol_labeller(),
        )  # fmt: skip
    colour_by = c3.radio(
        t("inside.overlay"), ["off", *inside_dag.COLOUR_BY], horizontal=True, key=f"{key}_colour", persist_state="session",
        format_func=_labeller("inside.overlay_"),
    )  # fmt: skip
    window = (
        st.slider(t("inside.window"), 1, HISTORY, 1, key=f"{key}_window", persist_state="session")
        if colour_by != "off"
        else 1
    )
    if len(sources) == 1:
        st.caption(t("inside.input_bytes_only", model=model))
    ep = server.endpoint()
    if image is None:
        from triton_kitchen.core.samples import SAMPLE_PHOTOS, sample_jpeg

        image = sample_jpeg(SAMPLE_PHOTOS[0])
    payload = inside_dag.NOT_AN_IMAGE if source == "text" else image
    b1, b2 = st.columns(2)
    one = server.run_button(
        t("inside.send"), where=b1, key=f"{key}_send", type="primary", disabled=ep is None or payload is None
    )
    many = server.run_button(
        t("inside.send_n", n=SEND_N), where=b2, key=f"{key}_send_n", disabled=ep is None or payload is None
    )
    if ep is None:
        st.caption(t("inside.no_server"))
    asked = outputs if len(outputs) < len(dag.outputs) else None  # all ticked: name none, as clients do
    history = _history(f"{key}_hist_{model}_{','.join(outputs)}")
    if (one or many) and outputs:
        with st.spinner(t("inside.sending")):
            for _ in range(SEND_N if many else 1):
                try:
                    report = inside_dag.probe(ep, model, payload, asked, protocol, dag)
                except inside.InsideError as exc:
                    errors.show_error(exc)
                    break
                history.append(report)
                del history[:-HISTORY]
    report = history[-1] if history else None
    if report is None:
        present.graphviz_chart(inside_dag.dot(dag, i18n.lang(), outputs or None))
        st.caption(t("inside.predicted"))
        return
    recent = [r for r in history[-window:] if r.ok] or [report]
    times = inside_dag.step_times(recent if report.ok else [report])
    colour = None if colour_by == "off" else colour_by
    present.graphviz_chart(inside_dag.dot(dag, i18n.lang(), outputs, report, times, colour))
    _explain(dag, asked, report, times, colour, len(recent) if report.ok else 1, f"{key}_notes_{model}")


def _explain(dag: Dag, asked, report: inside.InsideReport, times, colour, n: int, notes_key: str) -> None:
    none, sep = t("inside.none"), t("inside.list_sep")
    if report.ok:
        st.success(t("inside.ok", outputs=sep.join(f"{k} {v}" for k, v in report.outputs.items())), icon="✅")
        predicted, pruned, wrong = inside_dag.confirmation(dag, asked, report)
        if wrong:
            st.warning(t("inside.mismatch", steps=sep.join(wrong)))
        else:
            st.caption(
                t(
                    "inside.confirmed",
                    pruned=sep.join(pruned) or none,
                    predicted=sep.join(predicted) or none,
                )
            )
        if colour and times:
            top = max((v.value(colour) or 0.0 for v in times.values()), default=0.0)
            st.caption(t("inside.scale", top=f"{top:.2f}", what=t(f"inside.overlay_{colour}"), n=n))
    else:
        if report.failed_step:
            st.error(t("inside.failed", step=report.failed_step), icon="⛔")
        elif report.evidence.get("candidates"):
            st.error(
                t("inside.failed_undecided", candidates=sep.join(report.evidence["candidates"])), icon="⛔"
            )
        else:
            st.error(t("inside.failed_nothing_ran"), icon="⛔")
        st.code(report.error or "", language=None, wrap_lines=True)
    notes = report.evidence.get("notes", [])
    if report.ok and not notes:
        return  # nothing to add: no empty box
    box = lazy_box(notes_key, t("inside.notes"))
    if box is None:
        return
    with box:
        if not report.ok:
            used, ran = _evidence_words(report)
            st.markdown(t("inside.evidence", evidence=used, ran=ran))
        for note in notes:
            st.markdown(f"- {note}")
