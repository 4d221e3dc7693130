"""Chapter 3: the three patterns drawn from our configs, intermediate memory, cascade ensemble vs BLS."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.core import catalog
from triton_kitchen.core.classify import ClassifyError
from triton_kitchen.core.config import ModelEntry
from triton_kitchen.labs import experiments, shapes
from triton_kitchen.tools import repository
from ui import errors, i18n, predict, present, server, tables
from ui.i18n import t
from ui.image_picker import pick_image, show_classification
from ui.inside_dag import inside_view
from ui.lesson import page_link, render_lesson


# Cached per catalog.fingerprint(): drawings and tables are redone when a config file changes.
@st.cache_resource(show_spinner=False, max_entries=2)  # read-only here; protobuf configs do not pickle
def _scan(stamp: tuple) -> dict[str, ModelEntry]:
    return catalog.models()


@st.cache_data(show_spinner=False, max_entries=32)
def _dot(name: str, lang: str, stamp: tuple) -> str:
    return repository.ensemble_dot(name, lang=lang)


@st.cache_data(show_spinner=False, max_entries=64)
def _memory(name: str, batch: int, in_flight: int, stamp: tuple) -> list[dict]:
    return repository.intermediate_memory(name, batch_size=batch, in_flight=in_flight)


def _models() -> dict[str, ModelEntry]:
    return _scan(catalog.fingerprint())


def _draw(name: str) -> None:
    entry = _models().get(name)
    if entry is None or entry.config is None:
        errors.show_error("model_not_ready", detail=name)
        return
    present.graphviz_chart(_dot(name, i18n.lang(), catalog.fingerprint()))
    st.caption(t("ch3.drawn_from", model=name))


def pipeline() -> None:
    _draw(catalog.IMAGE_CLASSIFIER)


def parallel() -> None:
    inside_view(catalog.TTA_ENSEMBLE, "ch3_par", None)  # the DAG, and one request on it
    st.caption(t("ch3.drawn_from", model=catalog.TTA_ENSEMBLE))
    page_link("views/lab_flow.py", "ch3.to_flow_lab")


def cascade() -> None:
    image = pick_image("ch3")
    # the page's whole width: a half column was unreadable on a projector
    inside_view(catalog.CASCADE_ENSEMBLE, "ch3_casc", image)
    st.caption(t("ch3.drawn_from", model=catalog.CASCADE_ENSEMBLE))
    entry = _models().get(catalog.CASCADE_BLS)
    st.markdown(t("ch3.bls_note"))
    if entry is not None:
        st.code(entry.text, language="protobuf")
        if any(line.lstrip().startswith("#") for line in entry.text.splitlines()):
            st.caption(t("repo.file_comments"))
    st.markdown(f"**{t('ch3.compare_title')}**")
    ep = server.endpoint()
    options = {k: t(f"ch3.fine_{k}") for k in ("both", "ensemble_only", "bls_only", "neither")}
    predict.ask("ch3_fine", t("ch3.fine_predict"), options)
    if server.run_button(
        t("ch3.compare"), key="ch3_compare", type="primary", disabled=image is None or ep is None
    ):
        predict.lock("ch3_fine")
        results = {}
        for model in (catalog.CASCADE_ENSEMBLE, catalog.CASCADE_BLS):
            try:
                results[model] = experiments.cascade_call(ep, image, model)
            except ClassifyError as exc:
                errors.show_error(exc)
        st.session_state["ch3_results"] = (hash(image), results)
    kept = st.session_state.get("ch3_results")
    results = kept[1] if kept and image is not None and kept[0] == hash(image) else {}
    cols = st.columns(2)
    for col, (model, call) in zip(cols, results.items(), strict=False):
        with col:
            show_classification(call.result)
            if call.answer_tier is not None:
                kind = "ensemble" if model == catalog.CASCADE_ENSEMBLE else "bls"
                st.info(t(f"ch3.answer_tier_{kind}", tier=call.answer_tier), icon="🔎")
            st.caption(
                t(
                    "ch3.tier_runs",
                    coarse=call.tier_runs[catalog.CLASSIFIER_COARSE],
                    fine=call.tier_runs[catalog.CLASSIFIER],
                    tiers=call.tiers_ran,
                )
            )
    if len(results) == 2:
        outcome = experiments.fine_model_outcome(
            results[catalog.CASCADE_ENSEMBLE], results[catalog.CASCADE_BLS]
        )
        if outcome is None:
            st.caption(t("ch3.fine_disturbed"))
        else:
            predict.reveal("ch3_fine", options, outcome, t(f"ch3.fine_detail_{outcome}"))


def memory() -> None:
    name = st.selectbox(
        t("ch3.memory_model"),
        [catalog.IMAGE_CLASSIFIER, catalog.TTA_ENSEMBLE, catalog.CASCADE_ENSEMBLE, catalog.ENSEMBLE_PIPELINE],
        key="ch3_mem_model",
        persist_state="session",
        placeholder=t("widget.choose"),
    )
    c1, c2 = st.columns(2)
    batch = c1.select_slider(t("ch3.batch"), [1, 2, 4, 8], value=8, key="ch3_batch", persist_state="session")
    in_flight = c2.slider(t("ch3.in_flight"), 1, 128, 64, key="ch3_in_flight", persist_state="session")
    rows = _memory(name, batch, in_flight, catalog.fingerprint())
    per_request = [(r["bytes_per_request"] or 0) / 1e6 for r in rows]
    total = sum(per_request)
    st.caption(t("ch3.memory_caption", b=batch, total=total, n=in_flight, total_n=total * in_flight))
    # bars inside the table (no plotly here: the page stays quick to open; the numbers are the point)
    top = max(per_request, default=0) or 1.0
    st.dataframe(
        [
            {
                t("ch3.col.tensor"): r["tensor"],
                t("ch3.col.producer"): r["producer"],
                t("ch3.col.consumers"): ", ".join(r["consumers"]),
                t("ch3.col.type"): f"{r['data_type']} {r['dims']}",
                "mb": mb,
                "mb_n": mb * in_flight,
            }
            for r, mb in zip(rows, per_request, strict=True)
        ],
        column_config={
            "mb": st.column_config.ProgressColumn(
                t("ch3.per_request", b=batch), format="%.2f MB", min_value=0.0, max_value=top
            ),
            "mb_n": st.column_config.ProgressColumn(
                t("ch3.per_in_flight", n=in_flight),
                format="%.1f MB",
                min_value=0.0,
                max_value=top * in_flight,
            ),
        },
        hide_index=True,
        width="stretch",
    )


def _stubs_table(ep) -> None:
    """The drill model's stub processes as the process table shows them now."""
    if not ep.embedded:
        st.info(t("py_inside.stubs_remote"))
        return
    embedded = server.supervisor().server
    found = shapes.stubs(catalog.SHAPES_DRILL, embedded.pid if embedded is not None else None)
    if not found:  # not loaded yet: the drills' models load on first use (the burst below loads it)
        st.caption(t("py_inside.stubs_on_first_use", model=catalog.SHAPES_DRILL))
        return
    tables.show(
        [
            {
                t("py_inside.col.instance"): s.instance,
                t("py_inside.col.pid"): str(s.pid),
                t("py_inside.col.region"): s.region,
                t("py_inside.col.region_mb"): None if s.region_bytes is None else s.region_bytes / 2**20,
            }
            for s in found
        ],
        decimals={t("py_inside.col.region_mb"): 1},
    )
    st.caption(t("py_inside.stubs_note", n=len(found)))


def python_backend() -> None:
    ep = server.endpoint()
    st.markdown(f"**{t('py_inside.stubs_title')}**")
    if ep is None:
        server.say_no_server()
        return
    stubs_box = st.container()  # filled after the burst below: the burst may be what loads the model
    options = predict.choices("py_inside.opt", ("list", "stacked", "one_each"))
    predict.ask("ch3_inside", t("py_inside.predict", n=shapes.INSIDE_BURST), options)
    if server.run_button(t("py_inside.run", n=shapes.INSIDE_BURST), key="ch3_inside_run", type="primary"):
        predict.measure(
            "ch3_inside",
            1,
            lambda stop, watch: shapes.inside_burst(ep, shapes.INSIDE_BURST),
            "ch3_inside_result",
            t("py_inside.running"),
        )
    with stubs_box:
        _stubs_table(ep)
    result = st.session_state.get("ch3_inside_result")
    if result is None:
        return
    tables.show(
        [
            {
                t("py_inside.col.pid"): str(pid),
                t("py_inside.col.call"): call,
                t("py_inside.col.len"): k,
                t("py_inside.col.requests"): ", ".join(f"#{i}" for i in indices),
            }
            for pid, call, k, indices in result.calls()
        ]
    )
    for text in result.errors[:1]:
        st.code(text, language="text", wrap_lines=True)
    predict.reveal(
        "ch3_inside",
        options,
        result.outcome(),
        t(
            "py_inside.detail",
            n=len(result.answers),
            calls=len(result.calls()),
            pids=", ".join(map(str, result.pids())),
            instances=result.instances,
        ),
    )
    page_link("views/ch9_scheduler.py", "py_inside.to_ch9")


render_lesson(
    3,
    live={
        "pipeline": pipeline,
        "parallel": parallel,
        "cascade": cascade,
        "memory": memory,
        "python_backend": python_backend,
    },
)
