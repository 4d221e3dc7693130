"""Shared memory in the request viewers (chapters 4 and 5): one real request whose tensors go
through a system shared-memory region, and the message that crossed the socket instead (the region's name and
each tensor's offset). The work is :func:`triton_kitchen.labs.requests_view.shm_request`'s."""

from __future__ import annotations

import streamlit as st

from triton_kitchen.labs import requests_view as rv
from triton_kitchen.tools.protocols import ProtocolError
from ui import errors, server, tables
from ui.i18n import t


def shm_viewer(model: str, image: bytes, protocol: str, key: str) -> None:
    """A box: send ``image`` to ``model`` over ``protocol`` (``http-shm`` or ``grpc-shm``) and show it."""
    # a bordered box, not an expander: the lesson's section is an expander already, and they do not nest well
    with st.container(border=True):
        st.markdown(f"**{t('shm_view.title')}**")
        st.caption(t("shm_view.intro"))
        ep = server.endpoint()
        local = ep is not None and ep.embedded
        if not local:
            st.caption(t("shm_view.local_only"))
        if st.button(t("shm_view.send"), key=f"{key}_shm", disabled=not local):
            try:
                st.session_state[f"{key}_shm_view"] = rv.shm_request(ep, model, image, protocol)
            except ProtocolError as exc:
                errors.show_error(exc)
        view: rv.ShmRequestView | None = st.session_state.get(f"{key}_shm_view")
        if view is None or view.protocol != protocol:
            return
        st.code(view.text, language="json" if protocol == "http-shm" else "protobuf")
        c1, c2 = st.columns(2)
        c1.metric(t("shm_view.socket_bytes"), f"{view.size:,}")
        c2.metric(t("shm_view.memory_bytes"), f"{view.tensor_bytes:,}")
        tables.show(
            [
                {
                    t("shm_view.col_tensor"): r["name"],
                    t("shm_view.col_role"): t(f"shm_view.{role}"),
                    t("shm_view.col_offset"): r["offset"],
                    t("shm_view.col_bytes"): r["byte_size"],
                }
                for role, rows in (("input", view.inputs), ("output", view.outputs))
                for r in rows
            ]
        )
        answer = ", ".join(f"{k} {v}" for k, v in view.answer.items())
        st.caption(
            t(
                "shm_view.evidence",
                region=view.region,
                listed=len(view.server_regions),
                answer=answer,
                gone=t("shm_view.gone") if not view.left_after else t("shm_view.still_there"),
            )
        )
        st.caption(t("shm_view.cuda"))
