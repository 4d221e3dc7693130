"""Chapter 1: what an inference server does — the repository browser."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.core import catalog
from triton_kitchen.core.classify import ClassifyError, client_code
from triton_kitchen.core.config import ModelEntry
from triton_kitchen.labs import experiments
from triton_kitchen.tools import repository
from ui import batching_toy, boxes, code_block, errors, i18n, predict, server
from ui.i18n import t
from ui.image_picker import pick_image, show_classification
from ui.lesson import page_link, render_lesson


def _columns(rows: list[dict], prefix: str) -> list[dict]:
    return [{t(f"{prefix}.{k}"): v for k, v in row.items()} for row in rows]


def _model_details(
    entry: ModelEntry, status: repository.ServerStatus | None, key: str = "ch1_config_tab"
) -> None:
    backend = repository.autofilled_backend(entry)
    if backend:
        st.info(t("repo.autofill", backend=backend, files=repository.version_files(entry)), icon="🪄")
        return
    if missing := repository.missing_config_text(entry, i18n.lang()):
        st.error(missing, icon="📄")
        return
    if entry.error:
        code = "config_too_large" if entry.error.code == "too_large" else "bad_config"
        errors.show_error(code, detail=repository.error_text(entry))
        st.code(entry.text, language="protobuf", line_numbers=True)
        return
    cfg = entry.config
    b = repository.batching(cfg)
    model_state = status.state_of(entry.name) if status else None
    c1, c2, c3, c4 = st.columns(4)
    c1.metric(t("repo.kind"), entry.kind)
    c2.metric(t("repo.max_batch_size"), b["max_batch_size"])
    c3.metric(t("repo.versions"), ", ".join(map(str, entry.versions)) or "—")
    c4.metric(t("repo.state"), _state_text(model_state) if model_state else "—")
    if b["max_batch_size"] > 0:
        st.caption(t("repo.batch_note", n=b["max_batch_size"]))
    st.markdown(f"**{t('repo.tensors')}**")
    st.dataframe(_columns(repository.tensors(cfg), "repo.col"), hide_index=True, width="stretch")
    if entry.is_ensemble:
        st.markdown(f"**{t('repo.steps')}**")
        st.dataframe(_columns(repository.ensemble_steps(cfg), "repo.col"), hide_index=True, width="stretch")
    else:
        if b["dynamic_batching"]:
            st.info(
                t(
                    "repo.dynamic_on",
                    preferred=", ".join(map(str, b["preferred_batch_size"])) or "—",
                    delay=b["max_queue_delay_us"],
                ),
                icon="🍱",
            )
        elif b["decoupled"]:
            st.info(t("repo.decoupled"), icon="📡")
        else:
            st.caption(t("repo.dynamic_off"))
        if repository.instances(cfg):
            st.caption(t("repo.instances", groups=repository.instances(cfg)))
    if entry.extra_configs:
        st.caption(t("repo.extra_configs", files=", ".join(entry.extra_configs)))
    # Lazy tabs: only the open one is drawn (the loaded config is long, and asked of the server).
    tab_file, tab_loaded = boxes.remembered_tabs(
        key, {tab: t(f"repo.tab_{tab}") for tab in ("file", "loaded")}
    )
    if tab_file.open:
        tab_file.code(entry.text, language="protobuf", line_numbers=True)
        if any(line.lstrip().startswith("#") for line in entry.text.splitlines()):
            tab_file.caption(t("repo.file_comments"))
    if tab_loaded.open:
        ep = server.endpoint()
        if ep is None or model_state is None or not model_state.ready:
            tab_loaded.caption(t("repo.not_loaded"))
        else:
            tab_loaded.caption(t("repo.loaded_note"))
            tab_loaded.code(repository.loaded_config_text(ep, entry.name), language="protobuf")


@st.fragment  # a click reruns only this part: cheap enough for a whole class clicking at once
def order_a_meal() -> None:
    """Send a photo through image_classifier (preprocess -> classifier -> postprocess) and show the top-5."""
    st.subheader(t("ch1.try_title"))
    st.caption(t("ch1.try_help"))
    left, right = st.columns([1, 2])
    with left:
        image = pick_image("ch1")
        protocol = st.radio(
            t("classify.protocol"),
            ["grpc", "http"],
            format_func=i18n.protocol_labeller(),
            horizontal=True,
            key="ch1_protocol",
            persist_state="session",
        )
        ep = server.endpoint()
        options = {k: t(f"ch1.count_{k}") for k in ("one", "three", "four")}
        predict.ask("ch1_count", t("ch1.count_predict"), options)
        clicked = server.run_button(
            t("classify.button"), key="ch1_classify", type="primary", disabled=image is None or ep is None
        )
    with right:
        if ep is not None:
            st.caption(t("ch1.client_code"))
            code_block.code(
                client_code(ep, protocol, catalog.IMAGE_CLASSIFIER), language="python", wrap_lines=True
            )
        if clicked:
            predict.lock("ch1_count")
            try:
                meal = experiments.order_a_meal(ep, image, protocol=protocol)
                st.session_state["ch1_result"] = (hash(image), meal)
            except ClassifyError as exc:
                st.session_state.pop("ch1_result", None)
                errors.show_error(exc)
        kept = st.session_state.get("ch1_result")
        if kept is not None and image is not None and kept[0] == hash(image):
            meal = kept[1]
            show_classification(meal.result)
            if meal.outcome() is not None:
                predict.reveal(
                    "ch1_count",
                    options,
                    meal.outcome(),
                    t("ch1.count_detail", counts=", ".join(f"{m} +{n}" for m, n in meal.counted.items())),
                )
        elif image is None:
            st.info(t("classify.pick_first"))


def _state_text(state: repository.ModelState) -> str:
    """Triton's state of a model, or that it loads on first use (a drill's model before its drill runs)."""
    return t("repo.state_on_first_use") if state.on_first_use else state.state


def repository_browser() -> None:
    st.subheader(t("repo.title"))
    status = server.status()
    entries = list(catalog.models().values())
    st.caption(t("repo.path", path=str(repository.DEFAULT_REPOSITORY.name) + "/"))
    rows = repository.summary_rows(entries, status)
    for row in rows:  # a drill's model not loaded yet: said so, not left blank like a fault
        state = status.state_of(row["model"]) if status is not None else None
        if state is not None and not state.ready:
            row["state"] = _state_text(state)
    st.dataframe(_columns(rows, "repo.col"), hide_index=True, width="stretch")
    names = [e.name for e in entries]
    current = i18n.selected_model()
    chosen = st.selectbox(
        t("repo.pick"),
        names,
        index=names.index(current) if current in names else 0,
        key="ch1_model",
        persist_state="session",
        placeholder=t("widget.choose"),
    )
    if chosen != current:
        i18n.set_selected_model(chosen)
    _model_details(entries[names.index(chosen)], status)


def other_repository() -> None:
    # not lazy (drawn closed too): a closed lazy expander would drop the uploads
    with boxes.remembered_expander("ch1_other_box", t("repo.other_title")):
        st.caption(t("repo.other_help", root=str(repository.repository_root())))
        path = st.text_input(
            t("repo.other_path"),
            key="ch1_other_path",
            persist_state="session",
            placeholder="model_repository",
        )
        uploads = st.file_uploader(
            t("repo.other_upload"), type=["pbtxt", "txt"], accept_multiple_files=True, key="ch1_other_upload"
        )
        entries: list[ModelEntry] = []
        if path.strip():
            try:
                entries += repository.open_repository(path.strip())  # only folders under repository_root()
            except repository.RepositoryError as exc:
                errors.show_error(exc)
        if uploads:
            entries += repository.parse_uploaded_configs([(u.name, u.getvalue()) for u in uploads])
        if not entries:
            return
        st.dataframe(_columns(repository.summary_rows(entries), "repo.col"), hide_index=True, width="stretch")
        for entry in entries:
            with st.container(border=True):
                st.markdown(f"**{entry.name}** · `{entry.config_path if entry.standalone else entry.path}`")
                _model_details(entry, None, key=f"ch1_other_tab_{entry.name}")


render_lesson(
    1,
    live={
        "kitchen": order_a_meal,
        "repository": repository_browser,
        "config": other_repository,
        "batching": lambda: (
            batching_toy.render(),
            page_link("views/lab_batching.py", "ch1.to_batching_lab"),
        ),
    },
)
