"""``python -m triton_kitchen class report``: what a class did, from the class database.

Registered in :mod:`triton_kitchen.cli.main`. ``--json`` prints exactly one JSON document on stdout; messages and
logs go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from triton_kitchen.classroom import ClassStore, class_report, default_url
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


def _missing_file(url: str) -> Path | None:
    """The SQLite file ``url`` names when it does not exist (opening it would create an empty database)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    path = Path(parsed.database)
    return None if path.exists() else path


def report_command(args: argparse.Namespace) -> int:
    try:
        url = args.database_url or default_url()
        shown = make_url(url).render_as_string(hide_password=True)
    except (SQLAlchemyError, ValueError) as exc:
        print(f"class report: not a database URL: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    missing = _missing_file(url)
    if missing is not None:
        print(
            f"class report: cannot read the class database: there is none at {missing} ({shown}); no class "
            f"has used it yet, or the app keeps it elsewhere (--database-url, ${DATABASE_URL_ENV}); nothing "
            "was created",
            file=sys.stderr,
        )
        return 1
    print(f"class database: {shown}", file=sys.stderr)
    try:
        store = ClassStore(url)
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
