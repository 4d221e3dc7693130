"""Tables with one number format: human headers (the caller's translated labels), thousands separators,
the same number of decimals down a column, and "—" for a missing value (never "None")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

MISSING = "—"


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def number_format(values: Sequence[Any], decimals: int | None = None) -> str | None:
    """The printf format (st.column_config.NumberColumn) for a column: ``%,d`` for whole numbers,
    ``%,.Nf`` otherwise; None when the column holds no numbers (text)."""
    numbers = [v for v in values if _is_number(v) and not (isinstance(v, float) and math.isnan(v))]
    if not numbers or any(not (_is_number(v) or v is None) for v in values):
        return None
    if decimals is None:
        decimals = 0 if all(isinstance(v, int) for v in numbers) else 1
    return "%,d" if decimals == 0 else f"%,.{decimals}f"


def column_config(rows: Sequence[Mapping[str, Any]], decimals: Mapping[str, int] | None = None) -> dict:
    """NumberColumn configs for every numeric column of ``rows`` (label -> config)."""
    decimals = decimals or {}
    labels: list[str] = []
    for row in rows:
        labels += [k for k in row if k not in labels]
    config = {}
    for label in labels:
        fmt = number_format([row.get(label) for row in rows], decimals.get(label))
        if fmt is not None:
            config[label] = st.column_config.NumberColumn(label, format=fmt)
    return config


def show(rows: Sequence[Mapping[str, Any]], decimals: Mapping[str, int] | None = None, **kwargs: Any) -> None:
    """``st.dataframe`` of ``rows`` (dicts keyed by translated column labels), formatted as above."""
    st.dataframe(
        [dict(r) for r in rows],
        column_config=column_config(rows, decimals),
        placeholder=MISSING,
        hide_index=True,
        width="stretch",
        **kwargs,
    )
