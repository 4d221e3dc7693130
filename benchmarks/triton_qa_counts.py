"""How ``check --triton-version X.Y`` agrees with Triton's own config QA suite of each version (the counts
tests/unit/test_triton_qa.py holds): cases, in scope, verdicts agreed, wording agreed, and each excluded case
with the reason.

    python benchmarks/triton_qa_counts.py            # both versions
    python benchmarks/triton_qa_counts.py 2.72 --json

Reads ../shared/triton-qa (or $TRITON_QA_DIR); a version whose suite is not there is skipped, and said so.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import triton_qa as qa  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("versions", nargs="*", default=list(qa.VERSIONS))
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    out = {}
    for version in args.versions:
        if not qa.available(version):
            print(f"{version}: the suite is not here ({qa.Suite.of(version).root})", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            results = [qa.check_case(c, Path(tmp)) for c in qa.cases(qa.Suite.of(version))]
        out[version] = qa.counts(results)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for version, c in out.items():
        print(
            f"Triton {version}: {c['cases']} cases, {c['in_scope']} in scope, verdicts agreed "
            f"{c['verdicts_agreed']}/{c['in_scope']}, Triton's wording agreed {c['wording_agreed']}/"
            f"{c['wording_in_scope']} (refusals, and loads whose warning test.sh greps), "
            f"{len(c['excluded'])} excluded:"
        )
        reasons: dict[str, list[str]] = {}
        for case, why in c["excluded"].items():
            reasons.setdefault(why, []).append(case)
        for why, ids in reasons.items():
            print(f"  - {len(ids)}: {why}")
            for case in ids:
                print(f"      {case}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
