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


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def column_decimals(values: Sequence[Any], decimals: int | None = None) -> int | None:
    """How many decimals a column of ``values`` shows (``decimals`` if given): 0 for whole numbers, else 1;
    None when the column holds no numbers (text)."""
    numbers = [v for v in values if _is_number(v) and not _missing(v)]
    if not numbers or any(not (_is_number(v) or v is None) for v in values):
        return None
    if decimals is None:
        decimals = 0 if all(isinstance(v, int) for v in numbers) else 1
    return decimals


def number_format(values: Sequence[Any], decimals: int | None = None) -> str | None:
    """The printf format (st.column_config.NumberColumn) for a column: ``%,d`` for whole numbers,
    ``%,.Nf`` otherwise; None when the column holds no numbers (text)."""
    decimals = column_decimals(values, decimals)
    if decimals is None:
        return None
    return "%,d" if decimals == 0 else f"%,.{decimals}f"


def compared_rows(
    compared: Mapping[str, Mapping[str, Any]], measure_label: str, decimals: Mapping[str, int] | None = None
) -> list[dict[str, Any]]:
    """``compared`` ({thing: {measure: value}}) turned on its side: one row per measure, one column per thing,
    each row's numbers written alike (as ``show`` writes a column's); a missing value stays None."""
    measures = list(dict.fromkeys(m for values in compared.values() for m in values))
    rows = []
    for measure in measures:
        values = [compared[thing].get(measure) for thing in compared]
        places = column_decimals(values, (decimals or {}).get(measure))
        row: dict[str, Any] = {measure_label: measure}
        for thing, v in zip(compared, values, strict=True):
            row[thing] = None if _missing(v) else f"{v:,.{places}f}" if places is not None else str(v)
        rows.append(row)
    return rows


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


def show_compared(
    compared: Mapping[str, Mapping[str, Any]], measure_label: str, decimals: Mapping[str, int] | None = None
) -> None:
    """A few things side by side over many measures (``compared_rows``): three columns fit a narrow page or a
    projector, where one column per measure ran off the side behind a scroll bar."""
    rows = compared_rows(compared, measure_label, decimals)
    right = {thing: st.column_config.TextColumn(thing, alignment="right") for thing in compared}  # numbers
    st.dataframe(rows, column_config=right, placeholder=MISSING, hide_index=True, width="stretch")
