"""``check --triton-version X.Y`` on Triton's own config QA suite of that version (``qa/L0_model_config`` of
Triton v2.51.0 and of r26.08, 2.72.0), laid out as its ``test.sh`` does: every in-scope run gets Triton's
verdict, and a refusal's first error (a load's first warning, where test.sh greps one) carries Triton's wording.

The suites are read from ``../shared/triton-qa/`` (or ``$TRITON_QA_DIR``); without them these tests skip.
``python benchmarks/triton_qa_counts.py`` prints the counts these tests hold.
"""

from __future__ import annotations

import pytest
import triton_qa as qa

VERSIONS = pytest.mark.parametrize("version", qa.VERSIONS)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of each version's suite, checked once by that version's rules: {version: [Result]}."""
    out = {}
    for version in qa.VERSIONS:
        if not qa.available(version):
            continue
        tmp = tmp_path_factory.mktemp(f"qa{version}")
        out[version] = [qa.check_case(c, tmp) for c in qa.cases(qa.Suite.of(version))]
    return out


def _of(results, version):
    if version not in results:
        pytest.skip(
            f"Triton's QA suite is not here ({qa.Suite.of(version).root}); set TRITON_QA_DIR to its folder"
        )
    return results[version]


@VERSIONS
def test_the_suite_is_laid_out_as_test_sh_runs_it(results, version):
    rs = _of(results, version)
    suite = qa.Suite.of(version)
    ids = [r.case.id for r in rs]
    platform_runs = [i for i in ids if i.startswith("noautofill_platform/") and "+version" not in i]
    # every noautofill_platform case once per platform of test.sh's TRIALS
    folders = [p for p in (suite.root / "noautofill_platform").iterdir() if p.is_dir()]
    assert len(platform_runs) == len(suite.trials) * len(folders)
    assert {i.split("@")[1] for i in platform_runs} == set(suite.trials)
    assert sum(1 for r in rs if r.case.loads) >= 45  # the *_success cases
    assert all(r.case.out_of_scope for r in rs if r.case.id.startswith("autofill_noplatform/tensorrt/"))
    if version == "2.72":  # test.sh of 2.72 runs no TensorFlow case and adds model_metrics
        assert not any("tensorflow" in i for i in ids)
        assert sum(i.startswith("model_metrics/") for i in ids) == 8


@VERSIONS
def test_every_in_scope_case_gets_tritons_verdict(results, version):
    rs = _of(results, version)
    in_scope = [r for r in rs if not r.case.out_of_scope]
    assert len(in_scope) >= (600 if version == "2.51" else 400)
    wrong = [
        (r.case.id, "loads" if r.case.loads else "refused", [e.format() for e in r.errors][:1])
        for r in in_scope
        if not r.verdict_agrees
    ]
    assert wrong == [], f"{len(wrong)} of {len(in_scope)} verdicts differ from Triton {version}'s"


@VERSIONS
def test_a_refusal_names_tritons_reason_first(results, version):
    worded = [r for r in _of(results, version) if r.case.wording_in_scope]
    missed = [
        (r.case.id, [e.triton_message for e in r.errors][:1], r.case.expected)
        for r in worded
        if not r.wording_agrees
    ]
    share = 1 - len(missed) / len(worded)
    assert share >= 0.95, missed[:5]
    assert missed == [], f"Triton's wording in {share:.0%} of first errors; missing: {missed[:5]}"


@VERSIONS
def test_the_same_rule_is_found_with_a_version_folder_added(results, version):
    """With a version folder the version rule cannot be what refuses the config: the config rule must."""
    with_version = [r for r in _of(results, version) if r.case.add_version]
    assert len(with_version) >= (250 if version == "2.51" else 150)
    codes = {r.errors[0].code for r in with_version if r.errors}
    assert "no_version" not in codes
    assert all(r.errors and r.case.matches(r.errors[0].triton_message) for r in with_version)


@VERSIONS
def test_a_loading_case_without_config_is_a_warning_on_the_folder(results, version):
    """Auto-complete: Triton fills a missing config in from the model file; check says so on the folder."""
    no_config = [
        r
        for r in _of(results, version)
        if r.case.loads and not r.case.repository and not (r.case.source / "config.pbtxt").exists()
        and not r.case.base
    ]  # fmt: skip
    assert len(no_config) >= 5
    for r in no_config:
        warn = [p for p in r.problems if p.code == "no_config_autofill"]
        assert warn and warn[0].line == 0 and warn[0].path.endswith(r.case.source.name), r.case.id
        assert warn[0].format().startswith(f"{warn[0].path}:0: warning: ")


@VERSIONS
def test_out_of_scope_cases_say_why_and_still_raise_nothing(results, version):
    rs = _of(results, version)
    out = [r.case for r in rs if r.case.out_of_scope]
    assert out and all(len(c.out_of_scope) > 20 for c in out)
    # check ran on every one of them (the fixture) without an exception: no traceback on any case
    assert len(rs) == len(qa.cases(qa.Suite.of(version)))


def test_the_2_72_suite_is_refused_by_2_51_where_it_uses_a_newer_field(results, tmp_path):
    """The model_metrics cases that 2.72 loads: 2.51 cannot parse them, with Triton's own wording for it."""
    rs = _of(results, "2.72")
    valid = [r.case for r in rs if r.case.id.startswith("model_metrics/valid_config/")]
    assert valid
    old = qa.Suite("2.51", *(getattr(valid[0].suite, f) for f in ("root", "trials", "python_auto_complete")))
    for case in valid:
        case = qa.QaCase(**{**case.__dict__, "suite": old})
        r = qa.check_case(case, tmp_path)
        assert r.errors and r.errors[0].code == "newer_field"
        assert r.errors[0].triton_message.startswith("failed to read text proto from ")
        assert "Triton parses it from 2.52 (NGC 24.11)" in r.errors[0].message
