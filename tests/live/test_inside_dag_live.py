"""One request on the DAG (triton_kitchen.labs.inside_dag): the failing step in red with Triton's message,
pruned steps greyed and confirmed by the server's own counts, steps coloured by their measured time. The marks
run offline on the repository's DAGs; the rest against the real embedded server over both protocols.

The tests of this topic that need no server, app or browser: tests/unit/test_inside_dag.py."""

from __future__ import annotations

import re
import time

import pytest
from _shared.inside_dag import PRUNED_FILL, dot_node
from conftest import settled

from triton_kitchen.core import kserve
from triton_kitchen.labs import inside_dag
from triton_kitchen.tools import inside


# -- live -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_a_text_file_sent_as_a_photo_turns_preprocess_red_with_tritons_message(server, protocol):
    dag = inside_dag.repository_dag("image_classifier")
    report = inside_dag.probe(server.endpoint, "image_classifier", inside_dag.NOT_AN_IMAGE, protocol=protocol)
    assert not report.ok and report.failed_step == "preprocess"
    for lang, failed_words in (("en", "failed here"), ("zh", "在这里失败")):
        dot = inside_dag.dot(dag, lang, None, report, inside_dag.step_times([report]), "total")
        pre = dot_node(dot, "preprocess")
        assert failed_words in pre and 'color="#c0392b"' in pre and "penwidth=3" in pre
        # the message on the node is Triton's own (preprocess's answer, behind the ensemble's prefix)
        assert "not_an_image" in report.error and "not_an_image" in pre
        for step in ("classifier", "postprocess"):
            assert f'fillcolor="{inside_dag.NOT_RUN.fill}"' in dot_node(dot, step)


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_the_greyed_steps_are_the_ones_the_servers_counts_say_did_not_run(server, sample_jpegs, protocol):
    dag = inside_dag.repository_dag("second_opinion")
    jpeg = sample_jpegs["chelsea"]

    def count() -> int:
        return int(
            kserve.statistics(server.endpoint, "classifier_coarse")["model_stats"][0]["execution_count"]
        )

    start = count()
    inside_dag.probe(server.endpoint, "second_opinion", jpeg, protocol=protocol)  # warm every step
    before = settled(count, lambda n: n > start)  # the warm-up's count lands a moment after its answer
    outputs = ["top5_labels"]
    report = inside_dag.probe(server.endpoint, "second_opinion", jpeg, outputs, protocol)
    time.sleep(0.3)  # a count that would rise if the step ran lands a moment after the answer
    after = count()
    assert report.ok and after == before  # Triton's own count: classifier_coarse did not execute
    predicted, pruned, wrong = inside_dag.confirmation(dag, outputs, report)
    assert predicted == pruned == ["classifier_coarse"] and wrong == []
    dot = inside_dag.dot(dag, "en", outputs, report)
    assert "pruned: did not run" in dot_node(dot, "classifier_coarse")
    assert "not requested" in dot_node(dot, "out:top5_scores") and "not requested" in dot_node(
        dot, "out:coarse_logits"
    )
    assert PRUNED_FILL not in dot_node(dot, "postprocess")


def test_the_overlay_colours_each_step_by_its_measured_median(server, sample_jpegs):
    reports = [
        inside_dag.probe(server.endpoint, "tta_ensemble", sample_jpegs["coffee"], protocol="grpc")
        for _ in range(3)
    ]
    assert all(r.ok for r in reports)
    times = inside_dag.step_times(reports)
    assert {sid: t.n for sid, t in times.items()} == {s.id: 3 for s in reports[0].steps}
    dot = inside_dag.dot(inside_dag.repository_dag("tta_ensemble"), "en", None, reports[-1], times, "compute")
    slowest = max(times, key=lambda sid: times[sid].compute_ms)
    assert f'fillcolor="{inside_dag.SCALE[-1]}"' in dot_node(dot, slowest)
    for sid, t in times.items():
        line = dot_node(dot, sid)
        assert f"compute {t.compute_ms:.2f} ms" in line and "(median of 3)" in line
        fill = re.search(r'fillcolor="([^"]+)"', line).group(1)
        assert fill == inside_dag.shade(t.compute_ms, times[slowest].compute_ms)[0]


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_a_tensor_input_ensemble_is_sent_the_photos_tensor(server, sample_jpegs, protocol):
    dag = inside_dag.repository_dag("ensemble_pipeline")
    assert not inside_dag.takes_bytes(dag)
    report = inside_dag.probe(server.endpoint, "ensemble_pipeline", sample_jpegs["coffee"], protocol=protocol)
    assert report.ok and report.outputs == {"output_label": [1, 1000]} and all(s.ran for s in report.steps)
    with pytest.raises(inside.InsideError, match="not an image"):
        inside_dag.input_arrays(dag, inside_dag.NOT_AN_IMAGE)
