"""``check`` agrees with the verdicts recorded from Triton 2.51 for every corpus case (``tests/corpus/<case>/case.json``),
without a server. tests/live/test_corpus_agreement_live.py loads each case into the real server and records the
verdicts again (``python tests/live/test_corpus_agreement_live.py``).
"""

from __future__ import annotations

import pytest
from _shared.corpus_agreement import CASES, case_meta, our_verdict

# ---------------------------------------------------------------------------------------------
# tests


def test_corpus_is_large_enough():
    assert len(CASES) >= 30
    verdicts = [case_meta(c)["triton_loads"] for c in CASES]
    assert verdicts.count(True) >= 10 and verdicts.count(False) >= 20


@pytest.mark.parametrize("case", CASES)
def test_recorded_verdict_agrees(case):
    """Offline: check agrees with the verdict recorded from Triton 2.51."""
    meta = case_meta(case)
    assert meta["triton_loads"] is not None, (
        f"{case}: run python tests/live/test_corpus_agreement_live.py to record it"
    )
    ours, problems = our_verdict(case)
    assert ours == meta["triton_loads"], (case, [p.message for p in problems])
    if not ours:
        first = next(p for p in problems if p.is_error)
        assert first.line and first.line >= 1
        assert first.code and first.message
