"""Tensor peek: for one request, the real tensors at each step of an ensemble, drawn by kind (the
photo the server received, the normalized tensor as an image, the logits as a histogram, the top 5). The work is
:mod:`triton_kitchen.labs.peek`'s; this only draws."""

from __future__ import annotations

import numpy as np
import streamlit as st

from triton_kitchen.labs import inside_dag, peek
from triton_kitchen.tools import inside
from ui import errors, server
from ui.i18n import t

PER_ROW = 5


def peek_view(model: str, key: str, image: bytes | None, protocol: str = "grpc", titled: bool = True) -> None:
    """A button that sends ``image`` to ``model`` once and shows what each step received and produced
    (``titled=False`` when the page's box already carries the title)."""
    if titled:
        st.markdown(f"**{t('peek.title')}**")
    st.caption(t("peek.intro"))
    dag = inside_dag.repository_dag(model)
    ep = server.endpoint()
    if not inside_dag.takes_bytes(dag):
        st.caption(t("peek.bytes_only", model=model))
    if server.run_button(t("peek.send"), key=f"{key}_peek", disabled=ep is None or image is None):
        with st.spinner(t("peek.sending")):
            try:
                arrays = inside_dag.input_arrays(dag, image)
                st.session_state[f"{key}_peek_{model}"] = peek.peek(ep, model, arrays, protocol)
            except (peek.PeekError, inside.InsideError) as exc:
                errors.show_error(exc)
    found: peek.Peek | None = st.session_state.get(f"{key}_peek_{model}")
    if found is None:
        return
    st.caption(t(f"peek.source_{found.source}"))
    errors.show_details(found.notes)
    # one column per stop, left to right as the data flows: the ensemble's input, each step, its outputs
    stops = (
        [(found.model, "input")]
        + [(s, "step") for s in dict.fromkeys(found.steps)]
        + [(found.model, "output")]
    )
    for row in range(0, len(stops), PER_ROW):
        cols = st.columns(PER_ROW)
        for col, (step, role) in zip(cols, stops[row : row + PER_ROW], strict=False):
            with col:
                if role == "step":
                    st.markdown(f"**{t('peek.step', model=step)}**")
                    for tensor in found.at(step, "input"):
                        _arrived(found, tensor)
                    shown = found.at(step, "output")
                else:
                    st.markdown(f"**{t(f'peek.ensemble_{role}', model=step)}**")
                    shown = found.at(step, role)
                if role == "output" and found.top5():
                    _top5(found, shown)
                    continue
                for i, tensor in enumerate(shown):  # a model used twice (tta's classifier) shows both runs
                    _tensor(found, tensor, f"{key}_{step}_{role}_{tensor.name}_{i}")


def _top5(found: peek.Peek, tensors: list[peek.PeekTensor]) -> None:
    for tensor in tensors:
        st.caption(f"`{tensor.name}` · {tensor.datatype} {tensor.shape}")
    st.dataframe(
        [{t("peek.label"): w, t("peek.score"): round(s, 4)} for w, s in found.top5()],
        hide_index=True,
        width="stretch",
    )


def _arrived(found: peek.Peek, tensor: peek.PeekTensor) -> None:
    """An input: where its values came from (an earlier output, or the ensemble's input), or drawn as is."""
    origin = peek.same_as(found, tensor)
    if origin is None:
        _tensor(found, tensor, "")
    elif origin.step == found.model:
        st.caption(t("peek.from_input", name=tensor.name, origin=origin.name))
    else:
        st.caption(t("peek.from_step", name=tensor.name, model=origin.step, origin=origin.name))


def _tensor(found: peek.Peek, tensor: peek.PeekTensor, key: str) -> None:
    st.caption(f"`{tensor.name}` · {tensor.datatype} {tensor.shape}")
    kind = peek.kind(tensor)
    if kind == "photo":
        st.image(bytes(tensor.value.reshape(-1)[0]), width="stretch")
        st.caption(t("peek.photo_note", n=len(bytes(tensor.value.reshape(-1)[0]))))
    elif kind == "image":
        st.image(peek.to_pixels(tensor.value), width="stretch")
        v = tensor.value
        st.caption(t("peek.image_note", lo=float(v.min()), hi=float(v.max()), mean=float(v.mean())))
    elif kind == "logits":
        fig = peek.logits_histogram(tensor.value, "", t("peek.logit"), t("peek.count"))
        st.plotly_chart(fig, key=key or None, width="stretch", config={"displayModeBar": False})
        st.caption(t("peek.logits_note", hi=float(tensor.value.max()), i=int(np.argmax(tensor.value))))
    elif kind == "probabilities":
        fig = peek.logits_histogram(tensor.value, "", t("peek.probability"), t("peek.count"))
        st.plotly_chart(fig, key=key or None, width="stretch", config={"displayModeBar": False})
        v = tensor.value
        st.caption(t("peek.probabilities_note", sum=float(v.sum()), hi=float(v.max()), i=int(np.argmax(v))))
    elif kind == "labels":
        words = [
            v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in tensor.value.ravel()
        ]
        st.markdown("\n".join(f"{i}. {w}" for i, w in enumerate(words[:10], 1)))
    else:
        values = np.asarray(tensor.value, dtype=np.float64).ravel()
        shown = ", ".join(f"{v:.4g}" for v in values[:10]) + (" …" if values.size > 10 else "")
        st.code(shown, language=None, wrap_lines=True)
