"""One request on the DAG (triton_kitchen.labs.inside_dag): the failing step in red with Triton's message,
pruned steps greyed and confirmed by the server's own counts, steps coloured by their measured time. The marks
run offline on the repository's DAGs; the rest against the real embedded server over both protocols.

Here the tests that need no server, app or browser; the others: tests/live/test_inside_dag_live.py."""

from __future__ import annotations

from _shared.inside_dag import PRUNED_FILL, dot_node

from triton_kitchen.labs import inside_dag
from triton_kitchen.tools import diagram, inside


# -- offline --------------------------------------------------------------------------------------------
def test_unmarked_drawing_is_the_plain_dag():
    dag = inside_dag.repository_dag("image_classifier")
    assert inside_dag.dot(dag) == diagram.to_dot(dag)


def test_leaving_an_output_out_greys_the_steps_only_it_needs_as_a_prediction():
    dag = inside_dag.repository_dag("second_opinion")
    dot = inside_dag.dot(dag, "en", ["top5_labels", "top5_scores"])
    coarse = dot_node(dot, "classifier_coarse")
    assert "would be pruned (predicted)" in coarse and "dashed" in coarse and PRUNED_FILL in coarse
    assert "not requested" in dot_node(dot, "out:coarse_logits")
    for step in ("preprocess", "classifier", "postprocess"):
        assert PRUNED_FILL not in dot_node(dot, step)
    edge = next(x for x in dot.splitlines() if '-> "out:coarse_logits"' in x)
    assert "style=dashed" in edge
    zh = inside_dag.dot(dag, "zh", ["coarse_logits"])
    assert "将被剪掉（预测）" in dot_node(zh, "classifier") and "将被剪掉" not in dot_node(
        zh, "classifier_coarse"
    )


def test_step_times_are_medians_over_the_requests_in_which_the_step_ran():
    def report(times: dict[str, tuple[float, float] | None]) -> inside.InsideReport:
        steps = [inside.StepReport(m, m, 1, v is not None, v and v[0], v and v[1]) for m, v in times.items()]
        return inside.InsideReport("e", "grpc", True, None, None, steps, [], {})

    reports = [
        report({"a": (1.0, 10.0), "b": (0.0, 2.0)}),
        report({"a": (3.0, 30.0), "b": None}),
        report({"a": (2.0, 20.0), "b": (0.0, 4.0)}),
    ]
    times = inside_dag.step_times(reports)
    assert times["a"] == inside_dag.StepTime(2.0, 20.0, 3) and times["b"] == inside_dag.StepTime(0.0, 3.0, 2)
    assert times["a"].value("total") == 22.0 and times["b"].value("queue") == 0.0
    assert inside_dag.shade(0.0, 10.0)[0] == inside_dag.SCALE[0]
    assert inside_dag.shade(10.0, 10.0) == (inside_dag.SCALE[-1], "#ffffff")
