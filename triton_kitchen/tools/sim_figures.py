"""Plotly pictures of a simulated run: which instance ran which batch when, who waited, and batch sizes.

fig = sim_figures.timeline(result, lang="zh")            # one row per instance, one bar per batch
fig = sim_figures.histograms({"simulated": {...}, "measured": {...}}, lang="en")
"""

from __future__ import annotations

import plotly.graph_objects as go

from triton_kitchen.core.lessons import t as _t
from triton_kitchen.tools.simulator import SimResult

BATCH_COLORS = ["#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"]
WAIT_COLOR = "#f39c12"


def _color(size: int, max_batch: int) -> str:
    step = (len(BATCH_COLORS) - 1) * (size - 1) / max(1, max_batch - 1)
    return BATCH_COLORS[min(len(BATCH_COLORS) - 1, round(step))]


def timeline(
    result: SimResult,
    lang: str,
    until_ms: float | None = None,
    unit_ms: float | None = None,
    unit: str = "ms",
    height: int = 260,
) -> go.Figure:
    """Batches as bars on their instance's row (labelled with the requests in them), each request's wait in
    the queue as an orange line on the queue row. ``unit_ms``/``unit``: show time in another unit (X)."""
    scale = unit_ms or 1.0
    names = {r.id: (r.name or str(r.id + 1)) for r in result.requests}
    fig = go.Figure()
    queue_row = _t("toy.queue_row", lang)
    named = len(result.requests) <= 12 and all(r.name for r in result.requests)
    waits = [
        r
        for r in result.requests
        if r.start_ms is not None
        and r.start_ms - r.arrival_ms > 1e-9
        and (until_ms is None or r.arrival_ms <= until_ms)
    ]
    # a few named orders: one queue row each (their waits overlap); a stream: one shared row
    wait_rows = {r.id: _t("toy.wait_row", lang, name=names[r.id]) if named else queue_row for r in waits}
    queue_rows = list(dict.fromkeys(wait_rows.values())) or [queue_row]
    rows = queue_rows + [_t("toy.instance_row", lang, n=i + 1) for i in range(result.config.instances)]
    first_instance = len(queue_rows)
    shown = [b for b in result.batches if until_ms is None or b.start_ms <= until_ms]
    for b in shown:
        label = (
            "".join(names[i] for i in b.requests)
            if all(result.requests[i].name for i in b.requests)
            else str(b.size)
        )
        fig.add_trace(
            go.Bar(
                base=[b.start_ms / scale],
                x=[(b.end_ms - b.start_ms) / scale],
                y=[rows[first_instance + b.instance]],
                orientation="h",
                marker_color=_color(b.size, result.config.max_batch_size),
                marker_line=dict(color="white", width=1),
                text=[label],
                textposition="inside",
                insidetextanchor="middle",
                showlegend=False,
                hovertemplate=_t("toy.batch_hover", lang, size=b.size, start="%{base:.3g}", unit=unit)
                + "<extra></extra>",
            )
        )
    for r in waits:
        fig.add_trace(
            go.Scatter(
                x=[r.arrival_ms / scale, r.start_ms / scale],
                y=[wait_rows[r.id]] * 2,
                mode="lines+markers",
                line=dict(color=WAIT_COLOR, width=3),
                marker=dict(size=6),
                showlegend=False,
                hovertemplate=_t(
                    "toy.wait_hover",
                    lang,
                    name=names[r.id],
                    ms=(r.start_ms - r.arrival_ms) / scale,
                    unit=unit,
                )
                + "<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="overlay",
        height=max(height, 90 + 42 * len(rows)),
        margin=dict(l=10, r=10, t=10, b=10),
        xaxis_title=_t("toy.time_axis", lang, unit=unit),
        yaxis=dict(categoryorder="array", categoryarray=list(reversed(rows))),
    )
    return fig


def histograms(series: dict[str, dict[int, int]], lang: str, height: int = 280) -> go.Figure:
    """Executions per batch size, one bar series per source (e.g. simulated and measured), as shares."""
    fig = go.Figure()
    for name, hist in series.items():
        total = sum(hist.values()) or 1
        sizes = sorted(hist)
        fig.add_trace(go.Bar(x=sizes, y=[hist[s] / total for s in sizes], name=name))
    fig.update_layout(
        barmode="group",
        height=height,
        margin=dict(l=10, r=10, t=10, b=10),
        xaxis=dict(dtick=1),
        xaxis_title=_t("toy.batch_size", lang),
        yaxis_title=_t("toy.share", lang),
        yaxis_tickformat=".0%",
        legend=dict(orientation="h", x=0, y=1.12),  # above the plot, clear of plotly's toolbar
        margin_t=30,
    )
    return fig


def lanes(
    cases: list[tuple[str, SimResult]],
    lang: str,
    marks: dict[str, str],
    marked: str,
    unit_ms: float,
    unit: str = "X",
) -> go.Figure:
    """Several simulated runs of the same arrivals, one above the other (chapter 9's priority lane and bounded
    queue). Per case: a row where the requests of group ``marked`` (a request's ``name``) wait, drawn as orange lines
    from arrival to start (or to a refusal after waiting); the instance's row, each batch a bar labelled with what it holds per group
    (``marks``: group -> the sign written after its count, e.g. "2★ 6"), orange when it holds ``marked``; and, if
    any, a row of the requests Triton refused, a cross per moment with their count."""
    fig = go.Figure()
    rows: list[str] = []
    for label, result in cases:
        wait_row = _t("toy.lane_wait_row", lang, case=label, mark=marks.get(marked, ""))
        run_row = _t("toy.lane_run_row", lang, case=label)
        refused_row = _t("toy.lane_refused_row", lang, case=label)
        mine = [r for r in result.requests if r.name == marked]
        # till it started, or till Triton refused it after waiting (a timeout); a full queue refuses on arrival
        waited = {r.id: r.start_ms if r.start_ms is not None else r.refused_ms for r in mine}
        waits = sorted(
            {
                (r.arrival_ms, waited[r.id])
                for r in mine
                if waited[r.id] is not None and waited[r.id] > r.arrival_ms + 1e-9
            }
        )
        refused = [r for r in result.requests if r.refused]
        rows += [wait_row, run_row] + ([refused_row] if refused else [])
        for arrived, started in waits:
            n = sum(1 for r in mine if (r.arrival_ms, waited[r.id]) == (arrived, started))
            fig.add_trace(
                go.Scatter(
                    x=[arrived / unit_ms, started / unit_ms],
                    y=[wait_row] * 2,
                    mode="lines+markers",
                    line=dict(color=WAIT_COLOR, width=3),
                    marker=dict(size=7),
                    showlegend=False,
                    hovertemplate=_t(
                        "toy.lane_wait_hover",
                        lang,
                        n=n,
                        mark=marks.get(marked, ""),
                        ms=(started - arrived) / unit_ms,
                        unit=unit,
                    )
                    + "<extra></extra>",
                )
            )
        for b in result.batches:
            held = [result.requests[i].name for i in b.requests]
            text = " ".join(f"{held.count(g)}{sign}" for g, sign in marks.items() if g in held)
            fig.add_trace(
                go.Bar(
                    base=[b.start_ms / unit_ms],
                    x=[(b.end_ms - b.start_ms) / unit_ms],
                    y=[run_row],
                    orientation="h",
                    marker_color=WAIT_COLOR if marked in held else BATCH_COLORS[2],
                    marker_line=dict(color="white", width=1),
                    text=[text],
                    textposition="inside",
                    insidetextanchor="middle",
                    showlegend=False,
                    hovertemplate=_t("toy.batch_hover", lang, size=b.size, start="%{base:.3g}", unit=unit)
                    + "<extra></extra>",
                )
            )
        moments = sorted({(r.refused_ms, r.refused) for r in refused})
        for at, why in moments:
            here = [r for r in refused if (r.refused_ms, r.refused) == (at, why)]
            text = " ".join(
                f"{sum(1 for r in here if r.name == g)}{sign}"
                for g, sign in marks.items()
                if any(r.name == g for r in here)
            )
            fig.add_trace(
                go.Scatter(
                    x=[at / unit_ms],
                    y=[refused_row],
                    mode="markers+text",
                    marker=dict(symbol="x", size=12, color="#c0392b"),
                    text=[text],
                    textposition="middle right",
                    showlegend=False,
                    hovertemplate=_t(f"toy.refused_{why}", lang, n=len(here), t=at / unit_ms, unit=unit)
                    + "<extra></extra>",
                )
            )
    fig.update_layout(
        barmode="overlay",
        height=90 + 40 * len(rows),
        margin=dict(l=10, r=10, t=10, b=10),
        xaxis_title=_t("toy.time_axis", lang, unit=unit),
        xaxis=dict(rangemode="tozero", dtick=1),
        yaxis=dict(categoryorder="array", categoryarray=list(reversed(rows))),
    )
    return fig
