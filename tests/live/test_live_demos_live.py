"""The live demos a teacher clicks first, in both
languages, against the real server: each must show its result, never the generic "something went wrong".

The tests of this topic that need no server, app or browser: tests/unit/test_live_demos.py."""

from __future__ import annotations

import pytest
from conftest import open_app_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import kserve, lessons, override
from triton_kitchen.core.ensemble import build_dag
from triton_kitchen.labs import experiments, mistakes
from triton_kitchen.labs.demo import speed_outcome
from triton_kitchen.tools import repository as repo

TIMEOUT = 90
CH2, CH3, CH8 = "views/ch2_ensemble_config.py", "views/ch3_multi_model.py", "views/ch8_mistakes.py"


def open_page(page: str, lang: str) -> AppTest:
    return open_app_page(page, lang, timeout=TIMEOUT, check=False)


def no_failure(at: AppTest, lang: str) -> None:
    """No exception, and no error box with the app's catch-all message."""
    assert not at.exception, [e.value for e in at.exception]
    generic = lessons.t("error.unexpected", lang)
    assert not [e.value for e in at.error if generic in str(e.value)], [e.value for e in at.error]


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_ch2_swap_button_shows_the_verdict(remote, lang):
    at = open_page(CH2, lang)
    at.radio(key="tk_predict_ch2_swap").set_value("wrong")
    at.button(key="ch2_swap").click().run()
    no_failure(at, lang)
    shown = "\n".join(m.value for m in at.markdown)
    assert lessons.t("predict.yours", lang) in shown and lessons.t("ch2.swap_refused", lang) in shown
    assert any(lessons.t("predict.wrong", lang) in w.value for w in at.warning)
    text = at.text_area(key="ch2_text").value
    assert text == mistakes.swap_input_map(
        repo.DEFAULT_REPOSITORY.joinpath("image_classifier", "config.pbtxt").read_text()
    )
    assert at.error and lessons.t("ch2.invalid", lang, n=1)[:4] in at.error[0].value  # the red verdict
    assert at.get("graphviz_chart"), "the diagram vanished"
    at.button(key="ch2_reset").click().run()
    no_failure(at, lang)
    assert at.success


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_ch8_experiments_4_5_6_show_their_results(remote, lang):
    at = open_page(CH8, lang)
    at.radio(key="tk_predict_ch8_speed").set_value("grpc_2x")  # predict first: the tutorial's claim
    for key in ("ch8_speed", "ch8_sse", "ch8_cascade"):
        at.button(key=key).click().run()
        no_failure(at, lang)
    assert at.get("plotly_chart"), "experiment 4's chart is missing"
    outcome = speed_outcome(at.session_state["ch8_speed_result"])
    shown = "\n".join(m.value for m in at.markdown)
    assert outcome and lessons.t(f"ch8.m4_{outcome}", lang) in shown  # "what happened", measured
    assert lessons.t("predict.yours", lang) in shown
    assert any("data:" in c.value for c in at.code), "experiment 5's stream is missing"
    frames = [df.value for df in at.dataframe]
    cascade = next(f for f in frames if "cascade_bls" in f.to_string())
    assert len(cascade) == 6
    fine = cascade[lessons.t("ch8.col.fine_runs", lang)]
    models = cascade[lessons.t("ch8.col.model", lang)]
    assert all(fine[models == "cascade_ensemble"] >= 1), "the ensemble always runs tier two"


def test_cascade_call_counts_the_tiers_that_ran(server, sample_jpegs):
    """`stage_used` is whose answer was kept; the statistics say which tiers ran."""
    ep = server.endpoint
    seen = set()
    for photo in ("coffee", "chelsea", "camera", "motorcycle"):
        ens = experiments.cascade_call(ep, sample_jpegs[photo], "cascade_ensemble")
        bls = experiments.cascade_call(ep, sample_jpegs[photo], "cascade_bls")
        assert ens.tier_runs == {"classifier_coarse": 1, "classifier": 1} and ens.tiers_ran == 2
        assert bls.tier_runs["classifier_coarse"] == 1
        assert bls.tier_runs["classifier"] == (1 if bls.answer_tier == 2 else 0)
        assert ens.answer_tier == bls.answer_tier
        seen.add(bls.answer_tier)
    assert seen == {1, 2}, f"the photos should exercise both tiers, got {seen}"


@pytest.mark.app
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_ch3_cascade_readout_says_both_tiers_ran_in_the_ensemble(remote, lang):
    at = open_page(CH3, lang)
    at.radio(key="tk_predict_ch3_fine").set_value("bls_only")
    at.button(key="ch3_compare").click().run()
    no_failure(at, lang)
    results = at.session_state["ch3_results"][1]  # (the photo's hash, the two calls)
    outcome = experiments.fine_model_outcome(results["cascade_ensemble"], results["cascade_bls"])
    assert outcome in ("both", "ensemble_only")  # the ensemble always runs tier two
    shown = "\n".join(m.value for m in at.markdown)
    assert lessons.t(f"ch3.fine_{outcome}", lang) in shown and lessons.t("ch3.fine_bls_only", lang) in shown
    infos = [i.value for i in at.info]
    ensemble_line = lessons.t("ch3.answer_tier_ensemble", lang, tier=1).split("1")[0]
    assert any(ensemble_line in i for i in infos), infos
    runs = [c.value for c in at.caption if "classifier_coarse" in c.value]
    assert len(runs) == 2 and "1" in runs[0]
    dag = build_dag("cascade_ensemble", repo.DEFAULT_REPOSITORY, validate=False)
    assert {"classifier_coarse", "classifier"} <= {s.model for s in dag.steps}


def test_a_server_without_control_api_is_named_as_such(server):
    """Remote mode: the batching lab's reload and the flow lab's edited config need the repository API;
    a server that refuses it (here: the session's, without its key) gets its own code, not "load failed"."""
    from triton_kitchen.core.endpoint import Endpoint
    from triton_kitchen.tools import flow

    remote = Endpoint.remote(server.http_url, server.grpc_url)
    with pytest.raises(override.BatchingError) as err:
        override.load_model(remote, override.MODEL)
    assert err.value.code == "no_control_api", err.value
    text = (repo.DEFAULT_REPOSITORY / "image_classifier" / "config.pbtxt").read_text()
    with pytest.raises(flow.FlowError) as ferr:
        flow.send_config(remote, text)
    assert ferr.value.code == "no_control_api", ferr.value.detail
    for lang in ("zh", "en"):
        assert lessons.t("error.batching_no_control_api", lang) != "error.batching_no_control_api"
        assert lessons.t("error.flow_no_control_api", lang) != "error.flow_no_control_api"
    assert not kserve.control_api_refused("in ensemble E, input X in model M is not mapped")
