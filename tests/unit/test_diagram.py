"""diagram.py: layered layout, crossings, DOT, and the words from ui.toml."""

from __future__ import annotations

from pathlib import Path

from triton_kitchen.core import lessons
from triton_kitchen.core.ensemble import Dag, DagStep, DagTensor, build_dag
from triton_kitchen.tools.diagram import COLORS, compute_layout, point_along, to_dot

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def test_layout_columns_follow_stages():
    dag = build_dag("ens", CORPUS / "valid_diamond")
    pos = compute_layout(dag).positions
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
    dag = _crossed_dag()
    as_given = compute_layout(dag, sweeps=0)
    assert (
        as_given.layers[2] == ["b2", "b1"] and as_given.crossings == 2
    )  # a1->b1 crosses a2->b2, and on to P, Q
    lay = compute_layout(dag)
    assert lay.crossings == 0
    pos = lay.positions
    for a, b, out in (("a1", "b1", "out:P"), ("a2", "b2", "out:Q")):
        assert pos[a][1] == pos[b][1] == pos[out][1], (a, b, out, pos)  # each chain on one row
    assert pos["a1"][1] != pos["a2"][1]


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


def test_layout_has_one_polyline_per_tensor_hop():
    dag = build_dag("ens", CORPUS / "valid_two_outputs")
    lay = compute_layout(dag)
    assert set(lay.positions) == set(dag.nodes())
    assert sorted((e.source, e.target, e.tensor) for e in lay.edges) == sorted(dag.edges())
    assert {e.tensor for e in lay.edges} == {"IN", "L", "R"}
    for e in lay.edges:
        assert e.points[0] == lay.positions[e.source] and e.points[-1] == lay.positions[e.target]
        assert not e.back


def test_cycle_still_drawn():
    dag = build_dag("ens", CORPUS / "cycle_two_steps")
    assert all(s.stage is None for s in dag.steps)
    lay = compute_layout(dag)
    assert set(lay.positions) == set(dag.nodes())
    back = [e for e in lay.edges if e.back]
    steps = {s.id for s in dag.steps}
    assert back and all(e.source in steps and e.target in steps for e in back)
    for e in back:  # bent below both ends, so it does not run through other nodes
        bend = min(y for _, y in e.points[1:-1])
        assert bend < min(lay.positions[e.source][1], lay.positions[e.target][1])
    dot = to_dot(dag)
    assert dot.count("never runs") == len(dag.steps)
    assert dot.count(f'fillcolor="{COLORS["stuck"]}"') == len(dag.steps)


def test_words_come_from_ui_toml():
    dag = build_dag("ens", CORPUS / "valid_diamond")
    for lang in lessons.LANGS:
        dot = to_dot(dag, lang=lang)
        word = lessons.t("diagram.level", lang, n=3)
        assert word in dot and word != "diagram.level"
        assert f"{lessons.t('diagram.input', lang)}: IN" in dot
    assert "最新版本 · 第 1 层" in to_dot(dag, lang="zh") and "latest · level 1" in to_dot(dag)


def test_a_size_known_only_per_request_is_said_in_words():
    """The classifier's ensemble takes the photo and gives its top-5 labels as TYPE_STRING (BYTES on the wire):
    their size is the strings', per request. The edge says so in the reader's language, not "?" (which reads as a fault); a fixed size stays a size."""
    from triton_kitchen.core.server import DEFAULT_REPOSITORY

    dag = build_dag("image_classifier", DEFAULT_REPOSITORY)
    for lang, word in (("en", "size varies"), ("zh", "大小不定")):
        dot = to_dot(dag, lang=lang)
        label = next(line for line in dot.splitlines() if '-> "out:top5_labels"' in line)
        assert "STRING [B,5]\\n" + word in label, label
        assert "?" not in dot
        assert "602 kB" in dot  # image_tensor: FP32 [3,224,224], 4 bytes each
