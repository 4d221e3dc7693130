"""``check`` on Triton's own config QA suite (``qa/L0_model_config`` of Triton v2.51.0), laid out as its
``test.sh`` does: every in-scope run gets Triton's verdict, and a refusal's first error carries Triton's wording.

The suite is read from ``../shared/triton-qa/`` (or ``$TRITON_QA_DIR``); without it these tests skip.
"""

from __future__ import annotations

import pytest
import triton_qa as qa

from triton_kitchen.cli.main import check_paths
from triton_kitchen.core.ensemble import CheckOptions

pytestmark = pytest.mark.skipif(
    not qa.available(), reason=f"Triton's QA suite is not here ({qa.SUITE}); set TRITON_QA_DIR to its folder"
)


def _verdict(case: qa.QaCase, tmp_path):
    target = qa.lay_out(case, tmp_path)
    problems = check_paths([str(target)], options=CheckOptions(autofill=case.autofill, gpus=qa.QA_GPUS))
    return [p for p in problems if p.is_error], problems


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case of the suite, checked once: (case, errors, all problems)."""
    tmp = tmp_path_factory.mktemp("qa")
    return [(c, *_verdict(c, tmp)) for c in qa.cases()]


def test_the_suite_is_laid_out_as_test_sh_runs_it(results):
    ids = [c.id for c, _, _ in results]
    platform_runs = [i for i in ids if i.startswith("noautofill_platform/") and "+version" not in i]
    # every noautofill_platform case once per platform of test.sh's TRIALS
    assert len(platform_runs) == 5 * len(
        [p for p in (qa.SUITE / "noautofill_platform").iterdir() if p.is_dir()]
    )
    assert {i.split("@")[1] for i in platform_runs} == set(qa.TRIALS)
    assert sum(1 for c, _, _ in results if c.loads) >= 50  # the *_success cases
    assert all(c.out_of_scope for c, _, _ in results if c.id.startswith("autofill_noplatform/tensorrt/"))


def test_every_in_scope_case_gets_tritons_verdict(results):
    in_scope = [(c, errs) for c, errs, _ in results if not c.out_of_scope]
    assert len(in_scope) >= 600
    wrong = [
        (c.id, "loads" if c.loads else "refused", [e.format() for e in errs][:1])
        for c, errs in in_scope
        if (not errs) != c.loads
    ]
    assert wrong == [], f"{len(wrong)} of {len(in_scope)} verdicts differ from Triton's"


def test_a_refusal_names_tritons_reason_first(results):
    refusals = [(c, errs) for c, errs, _ in results if not c.out_of_scope and not c.loads]
    missed = [
        (c.id, errs[0].triton_message, c.expected)
        for c, errs in refusals
        if not errs or not c.matches(errs[0].triton_message)
    ]
    share = 1 - len(missed) / len(refusals)
    assert share >= 0.9, missed[:5]
    assert missed == [], f"Triton's wording in {share:.0%} of first errors; missing: {missed[:5]}"


def test_the_same_rule_is_found_with_a_version_folder_added(results):
    """With a version folder the version rule cannot be what refuses the config: the config rule must."""
    with_version = [(c, errs) for c, errs, _ in results if c.add_version]
    assert len(with_version) >= 250
    codes = {errs[0].code for _, errs in with_version if errs}
    assert "no_version" not in codes
    assert all(errs and c.matches(errs[0].triton_message) for c, errs in with_version)


def test_a_loading_case_without_config_is_a_warning_on_the_folder(results):
    """Auto-complete: Triton fills a missing config in from the model file; check says so on the folder."""
    no_config = [
        (c, ps)
        for c, _, ps in results
        if c.loads and not c.repository and not (c.source / "config.pbtxt").exists()
    ]
    assert len(no_config) >= 5
    for case, problems in no_config:
        warn = [p for p in problems if p.code == "no_config_autofill"]
        assert warn and warn[0].line == 0 and warn[0].path.endswith(case.source.name), case.id
        assert warn[0].format().startswith(f"{warn[0].path}:0: warning: ")


def test_out_of_scope_cases_say_why_and_still_raise_nothing(results):
    out = [c for c, _, _ in results if c.out_of_scope]
    assert out and all(len(c.out_of_scope) > 20 for c in out)
    # check ran on every one of them (the fixture) without an exception: no traceback on any case
    assert len(results) == len(qa.cases())
