"""Helpers shared by tests/unit/test_corpus_agreement.py and tests/live/test_corpus_agreement_live.py."""

from __future__ import annotations

import json
from pathlib import Path

from triton_kitchen.core.config import load_repository
from triton_kitchen.core.ensemble import has_errors, validate_model

ROOT = Path(__file__).resolve().parents[2]

CORPUS = ROOT / "tests" / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "case.json").is_file())


def case_meta(name: str) -> dict:
    return json.loads((CORPUS / name / "case.json").read_text())


def our_verdict(name: str, root: Path = CORPUS):
    """(loads?, problems) as ``check`` sees the case's repository."""
    meta = case_meta(name)
    repo = load_repository(root / name)
    problems = validate_model(meta["load"], repo, with_dependencies=True)
    return not has_errors(problems), problems
