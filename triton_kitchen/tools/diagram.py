"""Pictures of an ensemble DAG: DOT text for ``st.graphviz_chart``, and the layered layout an animation uses.

Both draw the same graph (:class:`triton_kitchen.core.ensemble.Dag`): ensemble inputs on the left, steps in
columns by level (``DagStep.stage``: steps of one level stacked, they may run at the same time), ensemble
outputs on the right; each edge is a tensor labelled with its name, type, shape and bytes per request.
People read "level" (zh 层) for a DAG column; "tier" (zh 级) is a cascade's, never the DAG's.  The words
come from the ``[diagram]`` table of ``lessons/<lang>/ui.toml``.

:func:`compute_layout` places the nodes in Python (no Graphviz binary): longest-path layering by stage,
dummy nodes on edges that skip levels, then barycenter sweeps to reduce crossings.  It returns node
positions and one polyline per tensor hop, the base an animation builds on (:func:`point_along` places a
moving tensor on an edge).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from triton_kitchen.core import lessons
from triton_kitchen.core.ensemble import Dag
from triton_kitchen.core.tensors import format_bytes, short_name

COLORS = {
    "input": "#d8f0d8",
    "output": "#fde2c8",
    "step": "#dbe7f7",
    "ensemble_step": "#e8defa",
    "stuck": "#f8d0d0",
    "edge": "#8a8f98",
    "text": "#1f2937",
}
# what people call each node fill (captions say it; tests/unit/test_problem_messages.py checks it against the hue)
COLOR_NAMES = {
    "input": "green",
    "step": "blue",
    "output": "orange",
    "ensemble_step": "purple",
    "stuck": "red",
}


@dataclass(frozen=True)
class Mark:
    """A node's decoration on top of its usual look (:mod:`triton_kitchen.labs.inside_dag` draws a request with them):
    a fill, a border colour and width, a dashed outline, a font colour, and lines added under the label."""

    fill: str | None = None
    border: str | None = None
    width: float | None = None
    dashed: bool = False
    font: str | None = None
    lines: tuple[str, ...] = ()

    def with_lines(self, *lines: str) -> Mark:
        return replace(self, lines=self.lines + tuple(lines))

    def attributes(self, style: str, fill: str) -> str:
        """DOT attributes after the label: ``style`` and ``fill`` are the node's own, kept where unmarked."""
        parts = [f'style="{style + ",dashed" if self.dashed else style}"', f'fillcolor="{self.fill or fill}"']
        if self.border:
            parts.append(f'color="{self.border}"')
        if self.width:
            parts.append(f"penwidth={self.width:g}")
        if self.font:
            parts.append(f'fontcolor="{self.font}"')
        return ", ".join(parts)


def colour_words(lang: str = "en") -> dict[str, str]:
    """Node kind -> the colour word for a caption in ``lang``: {"input": "green", "step": "blue", ...}."""
    return {kind: _word(lang, name) for kind, name in COLOR_NAMES.items()}


def _word(lang: str, key: str, **args) -> str:
    return lessons.t("diagram." + key, lang, **args)


def short_type(data_type: str | None) -> str:
    """``FP32`` for ``TYPE_FP32``; ``?`` when unknown."""
    return short_name(data_type)


def shape_text(dims, batched: bool = False) -> str:
    if dims is None:
        return "?"
    inner = ",".join(str(d) for d in dims)
    return f"[B,{inner}]" if batched else f"[{inner}]"


def tensor_label(dag: Dag, name: str, show_bytes: bool = True, lang: str = "en") -> str:
    """Name, type and shape, and the bytes one request moves; a size known only per request (BYTES strings, a -1
    dimension) is said in words, not as "?", which reads as a fault."""
    t = dag.tensor(name)
    parts = [t.name, f"{short_type(t.data_type)} {shape_text(t.dims, t.batched)}"]
    if show_bytes:
        parts.append(format_bytes(t.bytes) if t.bytes is not None else _word(lang, "size_varies"))
    return "\n".join(parts)


def version_text(version: int, lang: str = "en") -> str:
    return _word(lang, "version_latest") if version == -1 else _word(lang, "version", n=version)


def step_label(step, lang: str = "en") -> str:
    lines = [step.model if step.id == step.model else f"{step.model} ({step.id})"]
    level = _word(lang, "level", n=step.stage) if step.stage else _word(lang, "never_runs")
    lines.append(f"{version_text(step.version, lang)} · {level}")
    if step.is_ensemble:
        lines.append(_word(lang, "ensemble"))
    if step.decoupled:
        lines.append(_word(lang, "decoupled"))
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
    """Column per node: ensemble inputs 0, a step its stage (the DAG's topological levels), outputs last.
    A step that never runs has no stage: it goes one column after the steps it reads from."""
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
            preds = [
                layer.get(producer[v], 0)
                for v in s.input_map.values()
                if v in producer and producer[v] != s.id
            ]
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


def point_along(points: list[tuple[float, float]], t: float) -> tuple[float, float]:
    """The point at fraction ``t`` (0..1) of a polyline's length (for moving tensors)."""
    if not points:
        return (0.0, 0.0)
    t = min(max(t, 0.0), 1.0)
    seg = [
        ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5
        for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False)
    ]
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


def to_dot(
    dag: Dag,
    lang: str = "en",
    show_bytes: bool = True,
    rankdir: str = "LR",
    marks: dict[str, Mark] | None = None,
) -> str:
    """Graphviz DOT source (``st.graphviz_chart`` renders it in the browser). ``marks``: node id (a step id,
    ``in:T``, ``out:T``) -> its :class:`Mark`; an edge touching a dashed node is drawn dashed and grey."""
    marks = marks or {}

    def node(nid: str, label: str, shape: str, style: str, fill: str) -> str:
        mark = marks.get(nid)
        if mark is None:
            st = f'"{style}"' if "," in style else style
            return f'{_q(nid)} [label={_q(label)}, shape={shape}, style={st}, fillcolor="{fill}"];'
        label = "\n".join([label, *mark.lines])
        return f"{_q(nid)} [label={_q(label)}, shape={shape}, {mark.attributes(style, fill)}];"

    out = [
        f"digraph {_q(dag.name)} {{",
        f"  rankdir={rankdir};",
        '  graph [fontname="Helvetica", nodesep=0.35, ranksep=0.6];',
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9, color="#8a8f98"];',
    ]
    for t in dag.inputs:
        tt = dag.tensor(t)
        label = f"{_word(lang, 'input')}: {t}\n{short_type(tt.data_type)} {shape_text(tt.dims, tt.batched)}"
        out.append("  " + node("in:" + t, label, "ellipse", "filled", COLORS["input"]))
    groups: dict[str | None, list] = {}
    for s in dag.steps:
        groups.setdefault(s.group, []).append(s)

    def step_line(s) -> str:
        color = (
            COLORS["stuck"] if not s.stage else COLORS["ensemble_step"] if s.is_ensemble else COLORS["step"]
        )
        return node(s.id, step_label(s, lang), "box", "rounded,filled", color)

    for g, members in groups.items():
        if g is None:
            for s in members:
                out.append("  " + step_line(s))
        else:
            out.append(f"  subgraph {_q('cluster_' + g)} {{")
            out.append(
                f'    label={_q(g + " (" + _word(lang, "ensemble") + ")")}; style=dashed; color="#9b8ac4";'
            )
            for s in members:
                out.append("    " + step_line(s))
            out.append("  }")
    if not any(s.group for s in dag.steps):
        for stage_ids in dag.stages:
            if len(stage_ids) > 1:
                out.append("  { rank=same; " + " ".join(_q(i) + ";" for i in stage_ids) + " }")
    for t in dag.outputs:
        tt = dag.tensor(t)
        label = f"{_word(lang, 'output')}: {t}\n{short_type(tt.data_type)} {shape_text(tt.dims, tt.batched)}"
        out.append("  " + node("out:" + t, label, "ellipse", "filled", COLORS["output"]))
    for u, v, tensor in dag.edges():
        faded = any(marks.get(n) is not None and marks[n].dashed for n in (u, v))
        extra = ', style=dashed, color="#c8c8c8", fontcolor="#9a9a9a"' if faded else ""
        out.append(f"  {_q(u)} -> {_q(v)} [label={_q(tensor_label(dag, tensor, show_bytes, lang))}{extra}];")
    out.append("}")
    return "\n".join(out) + "\n"
