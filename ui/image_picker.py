"""Image input (sample photo, upload, camera) and the top-5 bar chart."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from triton_kitchen.core.classify import Classification
from triton_kitchen.core.imaging import MAX_BYTES
from triton_kitchen.core.samples import SAMPLE_PHOTOS, sample_jpeg
from ui.i18n import protocol_label, t

SOURCES = ("sample", "upload", "camera")
UPLOAD_TYPES = ["jpg", "jpeg", "png", "gif", "bmp", "tif", "tiff", "webp", "ppm"]


def pick_image(key: str, preview: bool = True) -> bytes | None:
    """Let the user choose a photo; returns its encoded bytes (JPEG for samples) or None. ``preview``: show the
    chosen photo (False in a closed box, where it would be sent and decoded unseen)."""
    source = (
        st.segmented_control(
            t("image.source"),
            options=list(SOURCES),
            format_func={s: t(f"image.source_{s}") for s in SOURCES}.get,  # labels in this run's language
            default="sample",
            key=f"{key}_source",
            persist_state="session",
        )
        or "sample"
    )
    data: bytes | None = None
    if source == "sample":
        # the photo's name is the value, its label only what is shown: the same photo after a language switch
        name = (
            st.selectbox(
                t("image.sample"),
                options=list(SAMPLE_PHOTOS),
                format_func={n: t(f"image.sample_{n}") for n in SAMPLE_PHOTOS}.get,
                key=f"{key}_sample",
                persist_state="session",
                placeholder=t("widget.choose"),
            )
            or SAMPLE_PHOTOS[0]
        )
        data = sample_jpeg(name)  # cached for the whole process
    elif source == "upload":
        upload = st.file_uploader(t("image.upload"), type=UPLOAD_TYPES, key=f"{key}_upload")
        if upload is not None:
            if upload.size > MAX_BYTES:
                from ui.errors import show_error

                show_error("too_large", detail=f"{upload.size} bytes > {MAX_BYTES}")
                return None
            data = upload.getvalue()
    else:
        shot = st.camera_input(t("image.camera"), key=f"{key}_camera")
        if shot is not None:
            data = shot.getvalue()
    if data and preview:
        try:
            st.image(data, width=220)
        except Exception:  # noqa: BLE001 - a broken upload is reported when it is classified
            st.caption(t("image.no_preview"))
    return data


def classification_figure(result: Classification) -> go.Figure:
    labels = list(reversed(result.labels))
    scores = [s * 100 for s in reversed(result.scores)]
    fig = go.Figure(
        go.Bar(
            x=scores,
            y=labels,
            orientation="h",
            text=[f"{s:.1f}%" for s in scores],
            textposition="auto",
            marker_color="#76b900",
        )
    )
    fig.update_layout(
        height=240,
        margin=dict(l=10, r=10, t=30, b=10),
        xaxis=dict(title=t("classify.score_axis"), range=[0, 100]),
        title=t("classify.chart_title", model=result.model),
    )
    return fig


def show_classification(result: Classification) -> None:
    """Top-5 as a bar chart, with the measured round trip."""
    st.plotly_chart(classification_figure(result), width="stretch", config={"displayModeBar": False})
    st.caption(t("classify.took", ms=result.ms, protocol=protocol_label(result.protocol), model=result.model))
