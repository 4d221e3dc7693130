"""The doctor's chart: where a request's time goes, one horizontal bar per measured cell, one colour per part
(:data:`doctor_card.PARTS`, in the order a request lives them), in zh or en from ``[doctor]`` and ``[lab_doctor]``.
Pure: a report (:func:`doctor.run_doctor`'s JSON) in, a plotly figure out."""

from __future__ import annotations

import plotly.graph_objects as go

from triton_kitchen.core.lessons import t
from triton_kitchen.tools.doctor_card import PARTS

PART_COLORS = {
    "serialize": "#1f77b4",
    "wire": "#ff7f0e",
    "frontend": "#9467bd",
    "queue": "#d62728",
    "compute": "#2ca02c",
    "server_other": "#8c564b",
    "deserialize": "#17becf",
    "unexplained": "#7f7f7f",
}


def measured_cells(report: dict) -> list[dict]:
    """The report's cells that have an end-to-end time, in the report's order."""
    return [c for c in report.get("cells", []) if c.get("e2e_ms") is not None]


def cell_label(cell: dict) -> str:
    return f"{cell['protocol']} ×{cell['concurrency']}"


def time_figure(report: dict, lang: str) -> go.Figure:
    """A stacked horizontal bar per measured cell (ms per request), the first cell on top; a part not measured in
    a cell is left out of its bar (its time is in "unexplained")."""
    cells = measured_cells(report)
    labels = [cell_label(c) for c in cells]
    fig = go.Figure()
    for part in PARTS:
        values = [c.get("parts_ms", {}).get(part) for c in cells]
        if all(v is None for v in values):
            continue
        name = t(f"doctor.part_{part}", lang)
        fig.add_trace(
            go.Bar(
                y=labels,
                x=[0.0 if v is None else v for v in values],
                name=name,
                orientation="h",
                marker_color=PART_COLORS[part],
                customdata=[[name, c["e2e_ms"]] for c in cells],
                hovertemplate="%{y}: %{customdata[0]} %{x:.2f} ms / %{customdata[1]:.2f} ms<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="relative",  # a negative "unexplained" goes left of zero, the rest stacks to the right
        title=t("lab_doctor.chart_title", lang),
        xaxis_title=t("lab_doctor.chart_x", lang),
        yaxis=dict(autorange="reversed"),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0),
        height=max(260, 60 + 38 * len(cells)),
        margin=dict(l=10, r=10, t=90, b=40),
    )
    return fig
