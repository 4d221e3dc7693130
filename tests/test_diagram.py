"""diagram.py: layered layout, crossings, DOT and plotly renderings."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go

from triton_kitchen.diagram import compute_layout, layout, point_along, to_dot, to_plotly
from triton_kitchen.ensemble import Dag, DagStep, DagTensor, build_dag

CORPUS = Path(__file__).parent / "corpus"


def test_layout_columns_follow_stages():
    dag = build_dag("ens", CORPUS / "valid_diamond")
    pos = layout(dag)
    assert set(pos) == set(dag.nodes())
    assert pos["in:IN"][0] == 0
    assert pos["a"][0] == 1 and pos["b"][0] == pos["c"][0] == 2 and pos["d"][0] == 3
    assert pos["out:OUT"][0] == 4
    assert pos["b"][1] != pos["c"][1]  # same stage, side by side


def test_long_edges_get_polylines_through_dummies():
    dag = build_dag("ens", CORPUS / "valid_fan_out_fan_in")
    lay = compute_layout(dag)
    y3 = next(e for e in lay.edges if e.tensor == "y3")  # stage 1 -> stage 3
    assert len(y3.points) == 3
    assert [p[0] for p in y3.points] == [1, 2, 3]
    assert all(len(e.points) >= 2 for e in lay.edges)


def _crossed_dag() -> Dag:
    """Two chains whose initial order crosses: in order a1, a2 and b2, b1."""
    steps = [
        DagStep("a1", "m", -1, {"I": "X"}, {"O": "p"}, 1, 0),
        DagStep("a2", "m", -1, {"I": "Y"}, {"O": "q"}, 1, 1),
        DagStep("b2", "m", -1, {"I": "q"}, {"O": "Q"}, 2, 2),
        DagStep("b1", "m", -1, {"I": "p"}, {"O": "P"}, 2, 3),
    ]
    tensors = [
        DagTensor("X", None, ["a1"], "TYPE_FP32", [1], 4, "input"),
        DagTensor("Y", None, ["a2"], "TYPE_FP32", [1], 4, "input"),
        DagTensor("p", "a1", ["b1"], "TYPE_FP32", [1], 4),
        DagTensor("q", "a2", ["b2"], "TYPE_FP32", [1], 4),
        DagTensor("P", "b1", [], "TYPE_FP32", [1], 4, "output"),
        DagTensor("Q", "b2", [], "TYPE_FP32", [1], 4, "output"),
    ]
    return Dag("x", ["X", "Y"], ["P", "Q"], steps, tensors)


def test_barycenter_removes_crossings():
    lay = compute_layout(_crossed_dag())
    assert lay.crossings == 0
    assert lay.layers[2] in (["a1", "a2"], ["a2", "a1"]) or len(lay.layers) == 4


def test_point_along():
    pts = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0)]
    assert point_along(pts, 0) == (0.0, 0.0)
    assert point_along(pts, 0.5) == (1.0, 0.0)
    assert point_along(pts, 0.75) == (1.0, 0.5)
    assert point_along(pts, 2) == (1.0, 1.0)


def test_dot_has_nodes_edges_ranks_and_languages():
    dag = build_dag("ens", CORPUS / "valid_diamond")
    dot = to_dot(dag)
    assert dot.startswith('digraph "ens" {') and dot.rstrip().endswith("}")
    assert '"in:IN" -> "a"' in dot and '"d" -> "out:OUT"' in dot
    assert '{ rank=same; "b"; "c"; }' in dot
    assert "FP32 [B,4]" in dot and "16 B" in dot
    assert "level 3" in dot and "stage" not in dot  # a DAG column is a level (a cascade has tiers)
    zh = to_dot(dag, lang="zh")
    assert "输入" in zh and "第 3 层" in zh and "阶段" not in zh and "级" not in zh


def test_dot_clusters_for_expanded_nesting_and_escaping():
    dag = build_dag("outer", CORPUS / "valid_nested", expand=True)
    dot = to_dot(dag)
    assert 'subgraph "cluster_inner"' in dot
    dag.steps[0].model = 'we"ird'
    assert 'we\\"ird' in to_dot(dag)


def test_plotly_figure_carries_layout():
    dag = build_dag("ens", CORPUS / "valid_two_outputs")
    fig = to_plotly(dag, title="two outputs")
    assert isinstance(fig, go.Figure)
    meta = fig.layout.meta
    assert set(meta["positions"]) == set(dag.nodes())
    assert {e["tensor"] for e in meta["edges"]} == {"IN", "L", "R"}
    texts = [t for tr in fig.data for t in (tr.text or [])]
    assert "split" in texts and "L" in texts
    fig.to_json()  # serialisable for st.plotly_chart


def test_cycle_still_drawn():
    dag = build_dag("ens", CORPUS / "cycle_two_steps")
    lay = compute_layout(dag)
    assert any(e.back for e in lay.edges)
    assert "never runs" in to_dot(dag)
    to_plotly(dag)
