"""Two plotly pictures of a :class:`~triton_kitchen.tools.flow.run.FlowRun`: the animation on the DAG, and a Gantt.

    fig = flow.animation(run, lang="zh")   # steps change colour, tensors travel the edges
    fig = flow.gantt(run, lang="zh")       # queue / compute phases per step, and the network legs

Node positions and edge polylines are the DAG page's (:func:`triton_kitchen.tools.diagram.compute_layout`).
"""

from __future__ import annotations

from triton_kitchen.core.ensemble import Dag
from triton_kitchen.core.lessons import t as _t
from triton_kitchen.tools import trace
from triton_kitchen.tools.diagram import compute_layout, point_along
from triton_kitchen.tools.flow.run import FlowRun
from triton_kitchen.tools.flow.timeline import Frame, frames, protocol_name, tensor_label

SPEEDS = {"slow": 400, "normal": 150, "fast": 50}  # display ms per frame
STATE_COLORS = {
    "idle": "#d5d9e0",
    "queued": "#f39c12",
    "computing": "#27ae60",
    "handoff": "#a9dfbf",
    "done": "#5b8def",
}
PHASE_COLORS = {  # one colour per legend entry (two legs in one grey could not be told apart)
    "queue": "#f39c12",
    "compute_input": "#76b7e5",
    "infer": "#27ae60",
    "compute_output": "#9b59b6",
    "client_send": "#7f8c8d",
    "http_recv": "#34495e",
    "grpc_send": "#a0522d",
    "http_send": "#a0522d",  # never in one trace with grpc_send
    "client_receive": "#e377c2",
}

Point = tuple[float, float]


def positions(dag: Dag) -> tuple[dict[str, Point], dict[tuple[str, str, str], list[Point]]]:
    """Node positions and edge polylines (keyed like ``dag.edges()``) from ``diagram.compute_layout``."""
    lay = compute_layout(dag)
    nodes = {k: (float(x), float(y)) for k, (x, y) in lay.positions.items()}
    edges = {(e.source, e.target, e.tensor): [(float(x), float(y)) for x, y in e.points] for e in lay.edges}
    return nodes, edges


def _source_label(run: FlowRun, lang: str) -> str:
    return _t(f"lab_flow.source_{run.source}", lang)


def animation_title(run: FlowRun, lang: str = "zh") -> str:
    """The animation's title: the ensemble, where its timeline came from, Triton's time and the protocol."""
    return _t(
        "lab_flow.anim_title",
        lang,
        model=run.dag.name,
        source=_source_label(run, lang),
        ms=run.timeline.server_ms,
        proto=protocol_name(run.timeline.protocol, lang),
    )


def animation(run: FlowRun, lang: str = "zh", pacing: str = "events", target: int = 120, height: int = 520):
    """The request as a plotly animation on the DAG: steps change colour, tensors travel the edges."""
    import plotly.graph_objects as go

    nodes, paths = positions(run.dag)
    frs = frames(run, lang, pacing, target)
    steps = run.dag.steps
    edge_keys = [e for e in run.dag.edges() if e in paths]
    xs_all = [p[0] for p in nodes.values()]
    ys_all = [p[1] for p in nodes.values()]
    x0, x1 = min(xs_all) - 0.9, max(xs_all) + 0.9  # room for a tensor's label at the first/last node
    y0, y1 = min(ys_all) - 0.9, max(ys_all) + 1.0

    ex, ey = [], []
    for e in edge_keys:
        for x, y in paths[e]:
            ex.append(x)
            ey.append(y)
        ex.append(None)
        ey.append(None)
    edges_trace = go.Scatter(
        x=ex, y=ey, mode="lines", line={"color": "#aab2bd", "width": 2}, hoverinfo="skip", showlegend=False
    )
    io_ids = [n for n in nodes if n.startswith(("in:", "out:"))]
    io_trace = go.Scatter(
        x=[nodes[n][0] for n in io_ids],
        y=[nodes[n][1] for n in io_ids],
        mode="markers+text",
        marker={"symbol": "circle", "size": 18, "color": "#ffffff", "line": {"color": "#34495e", "width": 2}},
        text=[n.split(":", 1)[1] for n in io_ids],
        textposition="bottom center",
        hoverinfo="text",
        showlegend=False,
    )

    px_per_unit = (height - 170) / (y1 - y0)  # plot area: height minus title, buttons and slider
    box = int(max(26, min(58, 0.45 * px_per_unit)))

    def step_trace(fr: Frame):
        colors = [STATE_COLORS[fr.states.get(s.id, "idle")] for s in steps]
        labels = []
        for s in steps:
            st = fr.states.get(s.id, "idle")
            badge = {"queued": "◷ ", "computing": "⚙ "}.get(st, "")
            sub = (
                _t(f"lab_flow.phase_{fr.phases[s.id]}", lang)
                if st == "computing" and fr.phases.get(s.id)
                else _t(f"lab_flow.state_{st}", lang)
            )
            labels.append(f"{badge}<b>{s.id}</b><br>{sub}")
        return go.Scatter(
            x=[nodes[s.id][0] for s in steps],
            y=[nodes[s.id][1] for s in steps],
            mode="markers+text",
            marker={
                "symbol": "square",
                "size": box,
                "color": colors,
                "line": {"color": "#2c3e50", "width": 2},
            },
            text=labels,
            textposition="top center",
            cliponaxis=False,
            hoverinfo="text",
            showlegend=False,
        )

    def tensor_trace(fr: Frame):
        xs, ys, labels = [], [], []
        for e in edge_keys:
            f = fr.tensors.get(e)
            if f is None:  # parked outside the visible range (None points draw a stray marker)
                xs.append(x0 - 10)
                ys.append(y0 - 10)
                labels.append("")
            else:
                x, y = point_along(paths[e], f)
                xs.append(x)
                ys.append(y)
                labels.append(tensor_label(run, e[2], lang))
        return go.Scatter(
            x=xs,
            y=ys,
            mode="markers+text",
            marker={
                "symbol": "diamond",
                "size": 16,
                "color": "#e74c3c",
                "line": {"color": "#7b241c", "width": 1},
            },
            text=labels,
            textposition="top center",
            textfont={"size": 11, "color": "#7b241c"},
            cliponaxis=False,  # the last frame's label ("top5_scores [1,5] 20 B") sits at the edge
            hoverinfo="text",
            showlegend=False,
        )

    def caption_trace(fr: Frame):
        return go.Scatter(
            x=[(x0 + x1) / 2],
            y=[y1 - 0.15],
            mode="text",
            text=[fr.caption],
            textfont={"size": 14, "color": "#1b2631"},
            cliponaxis=False,
            hoverinfo="skip",
            showlegend=False,
        )

    names = [f"f{i}" for i in range(len(frs))]
    go_frames = [
        go.Frame(name=n, data=[step_trace(fr), tensor_trace(fr), caption_trace(fr)], traces=[2, 3, 4])
        for n, fr in zip(names, frs, strict=True)
    ]
    first = frs[0]
    fig = go.Figure(
        data=[edges_trace, io_trace, step_trace(first), tensor_trace(first), caption_trace(first)],
        frames=go_frames,
    )
    origin = run.timeline.origin_ns
    slider_steps = [
        {
            "method": "animate",
            "label": f"{(fr.t_ns - origin) / 1e6:.3f} ms",
            "args": [
                [n],
                {
                    "mode": "immediate",
                    "frame": {"duration": 0, "redraw": True},
                    "transition": {"duration": 0},
                },
            ],
        }
        for n, fr in zip(names, frs, strict=True)
    ]

    def play(ms: int) -> dict:
        return {
            "frame": {"duration": ms, "redraw": True},
            "fromcurrent": True,
            "transition": {"duration": 0},
            "mode": "immediate",
        }

    buttons = [
        {"label": _t(f"lab_flow.play_{name}", lang), "method": "animate", "args": [None, play(ms)]}
        for name, ms in SPEEDS.items()
    ]
    buttons.append(
        {
            "label": _t("lab_flow.pause", lang),
            "method": "animate",
            "args": [
                [None],
                {
                    "frame": {"duration": 0, "redraw": False},
                    "mode": "immediate",
                    "transition": {"duration": 0},
                },
            ],
        }
    )
    fig.update_layout(
        title={"text": animation_title(run, lang), "x": 0.01, "font": {"size": 15}},
        height=height,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        plot_bgcolor="#fbfcfd",
        xaxis={"visible": False, "range": [x0, x1]},
        yaxis={"visible": False, "range": [y0, y1]},
        updatemenus=[
            {
                "type": "buttons",
                "direction": "left",
                "showactive": False,
                "x": 0.0,
                "y": -0.02,
                "xanchor": "left",
                "yanchor": "top",
                "buttons": buttons,
            }
        ],
        sliders=[
            {
                "active": 0,
                "steps": slider_steps,
                "x": 0.0,
                "len": 1.0,
                "y": -0.12,
                "yanchor": "top",
                "currentvalue": {"prefix": "t = ", "font": {"size": 13}},
                "font": {"color": "rgba(0,0,0,0)"},
                "ticklen": 2,
                "pad": {"t": 10},
            }
        ],
    )
    fig.update_layout(margin={"b": 120})
    fig.layout.meta = {
        "frame_t_ns": [fr.t_ns for fr in frs],
        "frame_key": [fr.key for fr in frs],
        "origin_ns": origin,
        "pacing": pacing,
        "source": run.source,
    }
    return fig


GANTT_PHASES = ("queue", "compute_input", "infer", "compute_output")


def gantt_rows(run: FlowRun) -> list[tuple[str, trace.Phase]]:
    """(row label, phase) for the Gantt chart: network legs, then each step execution's phases."""
    rows: list[tuple[str, trace.Phase]] = []
    for p in run.timeline.network_phases():
        rows.append(("network", p))
    for i, s in enumerate(run.dag.steps):
        for ex in run.timeline.by_step().get(i, []):
            for p in ex.phases():
                rows.append((s.id, p))
    return rows


def gantt(run: FlowRun, lang: str = "zh", height: int = 420):
    """The same request as a timeline: per step queue / compute input / infer / compute output, and the network legs."""
    import plotly.graph_objects as go

    origin = run.timeline.origin_ns
    rows = gantt_rows(run)
    order = ["network"] + [s.id for s in run.dag.steps]
    fig = go.Figure()
    seen: set[str] = set()
    for kind in (*GANTT_PHASES, "client_send", "http_recv", "grpc_send", "http_send", "client_receive"):
        sel = [(label, p) for label, p in rows if p.kind == kind]
        if not sel:
            continue
        name = _t(f"lab_flow.phase_{kind}", lang)
        fig.add_trace(
            go.Bar(
                y=[_t("lab_flow.row_network", lang) if lb == "network" else lb for lb, _ in sel],
                x=[max(p.duration_ms, 0.002) for _, p in sel],
                base=[(p.start_ns - origin) / 1e6 for _, p in sel],
                orientation="h",
                name=name,
                marker={"color": PHASE_COLORS.get(kind, "#95a5a6")},
                hovertemplate=name + ": %{base:.3f} → +%{x:.3f} ms<extra>%{y}</extra>",
                showlegend=kind not in seen,
            )
        )
        seen.add(kind)
    labels = [_t("lab_flow.row_network", lang) if r == "network" else r for r in order]
    fig.update_layout(
        barmode="overlay",
        height=height,
        title={
            "text": _t("lab_flow.gantt_title", lang, source=_source_label(run, lang)),
            "x": 0.01,
            "font": {"size": 15},
        },
        xaxis={"title": _t("lab_flow.gantt_x", lang), "zeroline": True},
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(labels))},
        legend={"orientation": "h", "y": -0.25},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig
