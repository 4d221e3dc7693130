"""Pictures of an ensemble DAG: DOT text for ``st.graphviz_chart`` and a plotly figure.

Both renderings draw the same graph (:class:`triton_kitchen.ensemble.Dag`): ensemble inputs
on the left, steps in columns by level (``DagStep.stage``: steps of one level stacked, they may
run at the same time), ensemble outputs on the right; each edge is a tensor labelled with its
name, type, shape and bytes per request.  People read "level" (zh 层) for a DAG column; "tier"
(zh 级) is a cascade's, never the DAG's.

The plotly layout is computed here, in Python (no Graphviz binary): longest-path layering by
stage, dummy nodes on edges that skip stages, then barycenter sweeps to reduce crossings.
:func:`compute_layout` returns node positions and one polyline per tensor hop, the base an
animation builds on (:func:`point_along` places a moving tensor on an edge).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from triton_kitchen.ensemble import Dag, format_bytes

LABELS = {
    "en": {
        "input": "input",
        "output": "output",
        "level": "level {n}",
        "latest": "latest",
        "version": "v",
        "ensemble": "ensemble",
        "decoupled": "decoupled",
        "never_runs": "never runs",
        "per_request": "per request",
        "batch": "batch",
        "green": "green",
        "blue": "blue",
        "orange": "orange",
        "purple": "purple",
        "red": "red",
    },
    "zh": {
        "input": "输入",
        "output": "输出",
        "level": "第 {n} 层",
        "latest": "最新",
        "version": "版本",
        "ensemble": "集成模型",
        "decoupled": "解耦",
        "never_runs": "不会运行",
        "per_request": "每个请求",
        "batch": "批",
        "green": "绿色",
        "blue": "蓝色",
        "orange": "橙色",
        "purple": "紫色",
        "red": "红色",
    },
}

COLORS = {
    "input": "#d8f0d8",
    "output": "#fde2c8",
    "step": "#dbe7f7",
    "ensemble_step": "#e8defa",
    "stuck": "#f8d0d0",
    "edge": "#8a8f98",
    "text": "#1f2937",
}
# what people call each node fill (captions say it; tests/test_problem_messages.py checks it against the hue)
COLOR_NAMES = {"input": "green", "step": "blue", "output": "orange", "ensemble_step": "purple", "stuck": "red"}


def colour_words(lang: str = "en") -> dict[str, str]:
    """Node kind -> the colour word for a caption in ``lang``: {"input": "green", "step": "blue", ...}."""
    return {kind: _t(lang, name) for kind, name in COLOR_NAMES.items()}


def _t(lang: str, key: str) -> str:
    return LABELS.get(lang, LABELS["en"]).get(key, LABELS["en"][key])


def short_type(data_type: str | None) -> str:
    return (data_type or "?").removeprefix("TYPE_")


def shape_text(dims, batched: bool = False) -> str:
    if dims is None:
        return "?"
    inner = ",".join(str(d) for d in dims)
    return f"[B,{inner}]" if batched else f"[{inner}]"


def tensor_label(dag: Dag, name: str, show_bytes: bool = True) -> str:
    t = dag.tensor(name)
    parts = [t.name, f"{short_type(t.data_type)} {shape_text(t.dims, t.batched)}"]
    if show_bytes:
        parts.append(format_bytes(t.bytes))
    return "\n".join(parts)


def version_text(version: int, lang: str = "en") -> str:
    if version == -1:
        return f"{_t(lang, 'version')} {_t(lang, 'latest')}" if lang == "zh" else "latest"
    return f"{_t(lang, 'version')} {version}" if lang == "zh" else f"v{version}"


def step_label(step, lang: str = "en") -> str:
    lines = [step.model if step.id == step.model else f"{step.model} ({step.id})"]
    bits = [version_text(step.version, lang)]
    if step.stage:
        bits.append(_t(lang, "level").format(n=step.stage))
    else:
        bits.append(_t(lang, "never_runs"))
    lines.append(" · ".join(bits))
    if step.is_ensemble:
        lines.append(_t(lang, "ensemble"))
    if step.decoupled:
        lines.append(_t(lang, "decoupled"))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# layout


@dataclass
class EdgePath:
    """One tensor hop: ``source`` and ``target`` node ids and the polyline between them."""

    tensor: str
    source: str
    target: str
    points: list[tuple[float, float]]
    back: bool = False  # goes against the flow (a cycle)


@dataclass
class Layout:
    positions: dict[str, tuple[float, float]]  # node id -> (x, y)
    layers: list[list[str]]  # real node ids per column, top to bottom
    edges: list[EdgePath]
    crossings: int = 0
    dummies: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def width(self) -> int:
        return len(self.layers)

    @property
    def height(self) -> int:
        return max((len(layer) for layer in self.layers), default=0)


def _node_layers(dag: Dag) -> dict[str, int]:
    layer: dict[str, int] = {}
    for t in dag.inputs:
        layer[f"in:{t}"] = 0
    producer = {}
    for s in dag.steps:
        for v in s.output_map.values():
            producer.setdefault(v, s.id)
    for s in dag.steps:
        if s.stage:
            layer[s.id] = s.stage
    # steps that never run (cycles, unconnected inputs): place after the producers we know
    for _ in range(2):
        for s in dag.steps:
            if s.stage:
                continue
            preds = [layer.get(producer[v], 0) for v in s.input_map.values() if v in producer and producer[v] != s.id]
            layer[s.id] = 1 + max(preds, default=0)
    last = max((layer[s.id] for s in dag.steps), default=0) + 1
    for t in dag.outputs:
        layer[f"out:{t}"] = last
    return layer


def _count_crossings(order: list[list[str]], adj: list[list[tuple[str, str]]]) -> int:
    total = 0
    for k, edges in enumerate(adj):
        if k + 1 >= len(order):
            break
        pa = {n: i for i, n in enumerate(order[k])}
        pb = {n: i for i, n in enumerate(order[k + 1])}
        pairs = sorted((pa[u], pb[v]) for u, v in edges if u in pa and v in pb)
        for i in range(len(pairs)):
            for j in range(i + 1, len(pairs)):
                if pairs[i][0] < pairs[j][0] and pairs[i][1] > pairs[j][1]:
                    total += 1
    return total


def compute_layout(dag: Dag, x_gap: float = 1.0, y_gap: float = 1.0, sweeps: int = 6) -> Layout:
    """Layered, crossing-reduced positions (x grows with the level; y centred per column)."""
    layer = _node_layers(dag)
    nlayers = max(layer.values(), default=0) + 1
    order: list[list[str]] = [[] for _ in range(nlayers)]
    for n in dag.nodes():
        order[layer[n]].append(n)
    # split long edges with dummy nodes; adjacency between consecutive layers
    adj: list[list[tuple[str, str]]] = [[] for _ in range(max(nlayers - 1, 0))]
    chains: list[tuple[str, str, str, list[str], bool]] = []
    for k, (u, v, tensor) in enumerate(dag.edges()):
        lu, lv = layer[u], layer[v]
        if lv <= lu:
            chains.append((u, v, tensor, [], True))
            continue
        path = [u]
        for lvl in range(lu + 1, lv):
            d = f"~{k}~{lvl}"
            order[lvl].append(d)
            layer[d] = lvl
            path.append(d)
        path.append(v)
        for a, b in zip(path, path[1:], strict=False):
            adj[layer[a]].append((a, b))
        chains.append((u, v, tensor, path[1:-1], False))
    preds: dict[str, list[str]] = {}
    succs: dict[str, list[str]] = {}
    for edges in adj:
        for a, b in edges:
            preds.setdefault(b, []).append(a)
            succs.setdefault(a, []).append(b)

    def sweep(cur: list[list[str]], down: bool) -> list[list[str]]:
        new = [list(col) for col in cur]
        rng = range(1, nlayers) if down else range(nlayers - 2, -1, -1)
        for lvl in rng:
            ref = new[lvl - 1] if down else new[lvl + 1]
            pos = {n: i for i, n in enumerate(ref)}
            nbrs = preds if down else succs
            keyed = []
            for i, n in enumerate(new[lvl]):
                ps = [pos[p] for p in nbrs.get(n, []) if p in pos]
                keyed.append((sum(ps) / len(ps) if ps else float(i), i, n))
            keyed.sort()
            new[lvl] = [n for _, _, n in keyed]
        return new

    best = [list(col) for col in order]
    best_x = _count_crossings(best, adj)
    cur = best
    for i in range(sweeps):
        if best_x == 0:
            break
        cur = sweep(cur, down=(i % 2 == 0))
        x = _count_crossings(cur, adj)
        if x < best_x:
            best, best_x = [list(col) for col in cur], x
    positions: dict[str, tuple[float, float]] = {}
    dummies: dict[str, tuple[float, float]] = {}
    for lvl, col in enumerate(best):
        n = len(col)
        for k, node in enumerate(col):
            xy = (lvl * x_gap, -(k - (n - 1) / 2) * y_gap)
            if node.startswith("~"):
                dummies[node] = xy
            else:
                positions[node] = xy
    edges = []
    for u, v, tensor, mids, back in chains:
        pts = [positions[u]] + [dummies[m] for m in mids] + [positions[v]]
        if back:  # bend around, below the two nodes
            (x0, y0), (x1, y1) = pts[0], pts[-1]
            low = min(y0, y1) - 0.6 * y_gap
            pts = [pts[0], (x0, low), (x1, low), pts[-1]]
        edges.append(EdgePath(tensor, u, v, pts, back))
    layers = [[n for n in col if not n.startswith("~")] for col in best]
    return Layout(positions, layers, edges, best_x, dummies)


def layout(dag: Dag) -> dict[str, tuple[float, float]]:
    """Node id -> (x, y); node ids as in :meth:`Dag.nodes` (``in:T``, step ids, ``out:T``)."""
    return compute_layout(dag).positions


def point_along(points: list[tuple[float, float]], t: float) -> tuple[float, float]:
    """The point at fraction ``t`` (0..1) of a polyline's length (for moving tensors)."""
    if not points:
        return (0.0, 0.0)
    t = min(max(t, 0.0), 1.0)
    seg = [((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5 for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False)]
    total = sum(seg)
    if total == 0:
        return points[0]
    goal = t * total
    for (x0, y0), (x1, y1), d in zip(points, points[1:], seg, strict=False):
        if goal <= d and d > 0:
            f = goal / d
            return (x0 + f * (x1 - x0), y0 + f * (y1 - y0))
        goal -= d
    return points[-1]


# ---------------------------------------------------------------------------------------------
# DOT


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(dag: Dag, lang: str = "en", show_bytes: bool = True, rankdir: str = "LR") -> str:
    """Graphviz DOT source (``st.graphviz_chart`` renders it in the browser)."""
    out = [
        f"digraph {_q(dag.name)} {{",
        f"  rankdir={rankdir};",
        '  graph [fontname="Helvetica", nodesep=0.35, ranksep=0.6];',
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9, color="#8a8f98"];',
    ]
    for t in dag.inputs:
        tt = dag.tensor(t)
        label = f"{_t(lang, 'input')}: {t}\n{short_type(tt.data_type)} {shape_text(tt.dims, tt.batched)}"
        out.append(f"  {_q('in:' + t)} [label={_q(label)}, shape=ellipse, style=filled, fillcolor=\"{COLORS['input']}\"];")
    groups: dict[str | None, list] = {}
    for s in dag.steps:
        groups.setdefault(s.group, []).append(s)

    def step_line(s) -> str:
        color = COLORS["stuck"] if not s.stage else COLORS["ensemble_step"] if s.is_ensemble else COLORS["step"]
        return (
            f"{_q(s.id)} [label={_q(step_label(s, lang))}, shape=box, style=\"rounded,filled\", "
            f"fillcolor=\"{color}\"];"
        )

    for g, members in groups.items():
        if g is None:
            for s in members:
                out.append("  " + step_line(s))
        else:
            out.append(f"  subgraph {_q('cluster_' + g)} {{")
            out.append(f"    label={_q(g + ' (' + _t(lang, 'ensemble') + ')')}; style=dashed; color=\"#9b8ac4\";")
            for s in members:
                out.append("    " + step_line(s))
            out.append("  }")
    if not any(s.group for s in dag.steps):
        for stage_ids in dag.stages:
            if len(stage_ids) > 1:
                out.append("  { rank=same; " + " ".join(_q(i) + ";" for i in stage_ids) + " }")
    for t in dag.outputs:
        tt = dag.tensor(t)
        label = f"{_t(lang, 'output')}: {t}\n{short_type(tt.data_type)} {shape_text(tt.dims, tt.batched)}"
        out.append(
            f"  {_q('out:' + t)} [label={_q(label)}, shape=ellipse, style=filled, fillcolor=\"{COLORS['output']}\"];"
        )
    for u, v, tensor in dag.edges():
        out.append(f"  {_q(u)} -> {_q(v)} [label={_q(tensor_label(dag, tensor, show_bytes))}];")
    out.append("}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# plotly


def to_plotly(dag: Dag, lang: str = "en", show_bytes: bool = True, title: str | None = None, lay: Layout | None = None):
    """A plotly figure of the DAG on :func:`compute_layout`'s positions.

    The layout (positions, polylines) is also stored in ``fig.layout.meta`` so a caller
    holding only the figure can animate on it.
    """
    import plotly.graph_objects as go

    lay = lay or compute_layout(dag)
    fig = go.Figure()
    # edges
    for e in lay.edges:
        xs = [p[0] for p in e.points]
        ys = [p[1] for p in e.points]
        fig.add_trace(
            go.Scatter(
                x=xs, y=ys, mode="lines", line=dict(color=COLORS["edge"], width=1.6, dash="dot" if e.back else "solid"),
                hoverinfo="skip", showlegend=False,
            )
        )
        (x0, y0), (x1, y1) = e.points[-2], e.points[-1]
        fig.add_annotation(
            x=x1 - 0.12 * (x1 - x0) if x1 != x0 else x1, y=y1 - 0.12 * (y1 - y0), ax=x0, ay=y0,
            xref="x", yref="y", axref="x", ayref="y", showarrow=True, arrowhead=3, arrowsize=1.1,
            arrowwidth=1.4, arrowcolor=COLORS["edge"], text="",
        )
    # edge labels at the middle of each polyline
    lx, ly, lt, lh = [], [], [], []
    for e in lay.edges:
        x, y = point_along(e.points, 0.5)
        t = dag.tensor(e.tensor)
        lx.append(x)
        ly.append(y)
        lt.append(e.tensor)
        lh.append(
            f"<b>{t.name}</b><br>{short_type(t.data_type)} {shape_text(t.dims, t.batched)}"
            + (f"<br>{format_bytes(t.bytes)} {_t(lang, 'per_request')}" if show_bytes else "")
            + f"<br>{e.source} → {e.target}"
        )
    fig.add_trace(
        go.Scatter(
            x=lx, y=ly, mode="markers+text", text=lt, textposition="top center", hovertext=lh, hoverinfo="text",
            marker=dict(size=7, color=COLORS["edge"]), textfont=dict(size=10, color="#4b5563"), showlegend=False,
            name="tensors",
        )
    )
    # nodes
    def node_trace(ids, color, symbol, labels, hovers, name):
        return go.Scatter(
            x=[lay.positions[i][0] for i in ids], y=[lay.positions[i][1] for i in ids], mode="markers+text",
            text=labels, hovertext=hovers, hoverinfo="text", textposition="bottom center", name=name,
            marker=dict(size=34, color=color, symbol=symbol, line=dict(color="#374151", width=1)),
            textfont=dict(size=11, color=COLORS["text"]), showlegend=False, customdata=ids,
        )

    ins = [f"in:{t}" for t in dag.inputs]
    outs = [f"out:{t}" for t in dag.outputs]
    fig.add_trace(node_trace(ins, COLORS["input"], "circle", list(dag.inputs),
                             [tensor_label(dag, t, show_bytes).replace("\n", "<br>") for t in dag.inputs],
                             _t(lang, "input")))
    step_ids = [s.id for s in dag.steps]
    colors = [COLORS["stuck"] if not s.stage else COLORS["ensemble_step"] if s.is_ensemble else COLORS["step"]
              for s in dag.steps]
    fig.add_trace(node_trace(step_ids, colors, "square", [s.id for s in dag.steps],
                             [step_label(s, lang).replace("\n", "<br>") for s in dag.steps], "steps"))
    fig.add_trace(node_trace(outs, COLORS["output"], "circle", list(dag.outputs),
                             [tensor_label(dag, t, show_bytes).replace("\n", "<br>") for t in dag.outputs],
                             _t(lang, "output")))
    height = max(260, 110 * max(lay.height, 1) + 80)
    fig.update_layout(
        title=title,
        height=height,
        margin=dict(l=20, r=20, t=40 if title else 10, b=10),
        plot_bgcolor="white",
        xaxis=dict(visible=False, range=[-0.5, max(lay.width - 1, 1) + 0.5]),
        yaxis=dict(visible=False, scaleanchor=None),
        hovermode="closest",
        meta={
            "positions": {k: list(v) for k, v in lay.positions.items()},
            "edges": [{"tensor": e.tensor, "source": e.source, "target": e.target, "points": [list(p) for p in e.points]}
                      for e in lay.edges],
        },
    )
    return fig
