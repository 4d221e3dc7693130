"""``python -m triton_kitchen class report``: what a class did, from the class database.

Registered in :mod:`triton_kitchen.cli.main`. ``--json`` prints exactly one JSON document on stdout; messages and
logs go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

from sqlalchemy.exc import SQLAlchemyError

from triton_kitchen.classroom import ClassStore, class_report
from triton_kitchen.core.settings import DATABASE_URL_ENV


def add_class_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("class", help="the class database: what students answered and measured")
    verbs = p.add_subparsers(dest="verb", required=True)
    r = verbs.add_parser(
        "report",
        help="count students, quiz answers and lab runs; first-try correctness per question",
        description=f"Report on the class database (--database-url, else ${DATABASE_URL_ENV}, else the app's "
        "SQLite file in its cache folder).",
    )
    r.add_argument("--database-url", default=None, help="sqlite:////abs/path.db or postgresql://user@host/db")
    r.add_argument("--class", dest="class_code", default=None, help="one class code (default: every class)")
    r.add_argument("--json", action="store_true", help="one JSON document on stdout")
    r.set_defaults(func=report_command)
    return p


def report_command(args: argparse.Namespace) -> int:
    try:
        store = ClassStore(args.database_url)
        doc = class_report(store, args.class_code)
        store.dispose()
    except (SQLAlchemyError, OSError) as exc:
        print(f"class report: cannot read the class database: {exc}".splitlines()[0], file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{doc['students']} students, {doc['quiz_answers']} quiz answers, {doc['lab_runs']} lab runs")
    for qid, q in doc["by_question"].items():
        share = q["first_try_correct"] / q["answered"] if q["answered"] else 0
        print(f"  {qid:<28} {q['first_try_correct']:>3}/{q['answered']:<3} first try correct ({share:.0%})")
    return 0
