"""The teacher's desk (only with TRITON_KITCHEN_TEACHER_TOKEN, for a session that gave it): how the class did
per question, the class's lab results on one chart, who is where, CSV export, reset; and the shared server's
controls, which students do not have."""

from __future__ import annotations

import statistics
import time

import plotly.graph_objects as go
import streamlit as st

from triton_kitchen import classroom
from triton_kitchen.core import lessons
from triton_kitchen.tools.bench_figures import PROTOCOL_COLORS
from ui import boxes, i18n, pages, present, sidebar
from ui import classroom as class_ui
from ui.i18n import t

ACTIVE_S = 300  # a student seen in the last five minutes is "here now"


def _safe_quiz(chapter: int, lang: str) -> list:
    try:
        return lessons.load_quiz(chapter, lang)
    except lessons.LessonError:
        return []


st.title(t("teacher.title"))
if not i18n.teacher_view_on():  # a student who typed the URL: nothing here
    st.info(t("teacher.off"))
    st.stop()

store = class_ui.store()
codes = store.classes()
top1, top2 = st.columns([3, 2])
with top2:
    # shows the mode as it is now: the projector's own bar may have turned it off since this page was drawn
    st.session_state[present.TEACHER_TOGGLE] = present.is_presenting()
    st.toggle(
        t("teacher.present"),
        key=present.TEACHER_TOGGLE,
        persist_state="session",
        on_change=lambda: present.set_presenting(st.session_state[present.TEACHER_TOGGLE]),
    )


def _compare_table(runs: list[dict]) -> None:
    """The protocol lab's "same input, three ways" runs: how many, and per protocol the median over the runs
    of each run's median latency and of the bytes each call sent on the network."""
    st.caption(
        t(
            "teacher.compare_runs",
            button=t("lab_protocols.run_bytes"),
            n=len(runs),
            students=len({r["nickname"] for r in runs}),
        )
    )
    per: dict[str, list[dict]] = {}
    for r in runs:
        for protocol, figures in r.get("protocols", {}).items():
            per.setdefault(protocol, []).append(figures)
    st.dataframe(
        [
            {
                t("teacher.col_protocol"): i18n.protocol_label(p),
                t("teacher.col_runs"): len(fs),
                t("teacher.col_median_ms"): round(statistics.median(f["median_ms"] for f in fs), 2),
                t("teacher.col_wire_sent"): round(statistics.median(f["wire_sent_per_call"] for f in fs)),
            }
            for p, fs in sorted(per.items())
        ],
        hide_index=True,
        width="stretch",
    )


if not codes:
    top1.info(t("teacher.no_class"))
    code = None
else:
    code = top1.selectbox(t("teacher.class"), codes, key="tk_teacher_class", persist_state="session")

if code:
    report = classroom.class_report(store, code)
    c1, c2, c3 = st.columns(3)
    c1.metric(t("teacher.students"), report["students"])
    c2.metric(t("teacher.answers"), report["quiz_answers"])
    c3.metric(t("teacher.lab_runs"), report["lab_runs"])

    st.subheader(t("teacher.where_title"))
    now = time.time()
    titles = {p.url: t(p.title_key) for p in pages.PAGES} | {
        "": t("page.home"),
        pages.HOME_ALIAS_URL: t("page.home"),
    }
    rows = [
        {
            t("teacher.col_student"): s["nickname"],
            t("teacher.col_page"): titles.get(s["page"], s["page"] or "—"),
            t("teacher.col_seen"): t("teacher.seconds_ago", s=int(now - s["last_seen"])),
        }
        for s in store.students(code)
        if now - s["last_seen"] < ACTIVE_S
    ]
    if rows:
        st.table(rows, hide_index=True)  # every column on a projector's 1024 px, none behind a scroll bar
    else:
        st.caption(t("teacher.nobody_now"))

    st.subheader(t("teacher.questions_title"))
    lang = i18n.lang()
    quiz = {q.id: q for ch in lessons.CHAPTERS for q in _safe_quiz(ch, lang)}
    table = classroom.question_table(store, code)
    if table:
        fig = go.Figure(
            go.Bar(
                x=[r["question"] for r in table],
                y=[round(100 * r["share"]) for r in table],
                text=[f"{r['correct']}/{r['answered']}" for r in table],
                # above each bar, so a question nobody got right (a bar of height 0) still shows "0/2"
                textposition="outside",
                cliponaxis=False,
                marker_color=["#d62728" if r["share"] < 0.5 else "#2ca02c" for r in table],
            )
        )
        fig.update_layout(
            height=320,
            yaxis_title=t("teacher.first_try_pct"),
            yaxis_range=[0, 100],
            margin=dict(l=10, r=10, t=30, b=10),
        )
        st.plotly_chart(fig, width="stretch", key="tk_teacher_questions")
        detail = []
        for r in table:
            q = quiz.get(r["question"])
            top_wrong = next(iter(r["wrong_choices"].items()), None)
            detail.append(
                {
                    t("teacher.col_chapter"): r["chapter"],
                    t("teacher.col_question"): q.prompt if q else r["question"],
                    t("teacher.col_first_try"): f"{r['correct']}/{r['answered']}",
                    t("teacher.col_wrong"): (
                        f"{q.choices[top_wrong[0]] if q else top_wrong[0]} (×{top_wrong[1]})"
                        if top_wrong
                        else "—"
                    ),
                }
            )
        # a static table: the prompts and choices are Markdown (code spans), and long ones wrap instead of being cut
        st.table(detail, hide_index=True)
    else:
        st.caption(t("teacher.no_answers"))

    st.subheader(t("teacher.labs_title"))
    proto = classroom.lab_rows(store, code, "protocols")
    batch = classroom.lab_rows(store, code, "batching")
    if proto:
        fig = go.Figure()
        for p in sorted({r["protocol"] for r in proto}):
            rs = [r for r in proto if r["protocol"] == p]
            fig.add_trace(
                go.Box(
                    y=[r["p50_ms"] for r in rs],
                    name=i18n.protocol_label(p),
                    boxpoints="all",
                    marker_color=PROTOCOL_COLORS.get(p),  # each protocol in the protocol lab's colour
                    line_color=PROTOCOL_COLORS.get(p),
                    text=[r["nickname"] for r in rs],
                    hovertemplate="%{text}: %{y:.1f} ms<extra></extra>",
                )
            )
        fig.update_layout(height=320, yaxis_title=t("teacher.p50_ms"), margin=dict(l=10, r=10, t=10, b=10))
        st.plotly_chart(fig, width="stretch", key="tk_teacher_proto")
    if batch:
        fig = go.Figure(
            go.Scatter(
                x=[r["concurrency"] for r in batch],
                y=[r["ratio"] for r in batch],
                mode="markers",
                text=[r["nickname"] for r in batch],
                hovertemplate="%{text}: ×%{y:.2f}<extra></extra>",
                marker=dict(size=12),
            )
        )
        fig.add_hline(y=1.0, line_dash="dot")
        fig.update_layout(
            height=320,
            xaxis=dict(
                tickmode="array", tickvals=sorted({r["concurrency"] for r in batch})
            ),  # whole numbers only
            xaxis_title=t("teacher.concurrency"),
            yaxis_title=t("teacher.ratio"),
            margin=dict(l=10, r=10, t=10, b=10),
        )
        st.plotly_chart(fig, width="stretch", key="tk_teacher_batch")
    compare = classroom.lab_rows(store, code, class_ui.PROTOCOL_COMPARE)
    if compare:
        _compare_table(compare)
    if not proto and not batch and not compare:
        st.caption(t("teacher.no_labs"))

    st.subheader(t("teacher.export_title"))
    st.download_button(
        t("teacher.csv"),
        classroom.answers_csv(store, code),
        file_name=f"{code}-answers.csv",
        mime="text/csv",
        on_click="ignore",
    )
    with boxes.remembered_expander("teacher_reset_box", t("teacher.reset_title")):
        # a confirmation, so never kept across pages (persist_state) and never carried to another class
        sure = st.checkbox(t("teacher.reset_sure", code=code), key=f"tk_teacher_reset_sure_{code}")
        if st.button(t("teacher.reset"), disabled=not sure, type="primary", key="tk_teacher_reset"):
            gone = store.reset_class(code)
            st.success(t("teacher.reset_done", code=code, n=gone))

st.subheader(t("teacher.server_title"))
sidebar.server_controls()
