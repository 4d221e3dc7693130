"""What a class did, counted from the store: the ``class report`` document and the teacher's tables."""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict

from triton_kitchen.classroom.store import ClassStore


def class_report(store: ClassStore, class_code: str | None = None) -> dict:
    """``{"students", "quiz_answers", "lab_runs", "by_question": {id: {"answered", "first_try_correct"}}}``, all
    integers; ``answered`` counts students who checked an answer, ``first_try_correct`` those whose first was right."""
    answers = store.answers(class_code)
    by_question: dict[str, dict[str, int]] = {}
    for a in answers:
        if not a["first_try"]:
            continue
        q = by_question.setdefault(a["question"], {"answered": 0, "first_try_correct": 0})
        q["answered"] += 1
        q["first_try_correct"] += int(bool(a["correct"]))
    return {
        "students": len(store.students(class_code)),
        "quiz_answers": len(answers),
        "lab_runs": len(store.lab_runs(class_code)),
        "by_question": dict(sorted(by_question.items())),
    }


def question_table(store: ClassStore, class_code: str) -> list[dict]:
    """Per question: chapter, students who answered, first-try correct share, and the wrong choices picked
    first (choice index -> how many), the most picked first."""
    rows: dict[str, dict] = {}
    wrong: dict[str, Counter] = defaultdict(Counter)
    for a in store.answers(class_code):
        if not a["first_try"]:
            continue
        r = rows.setdefault(
            a["question"], {"chapter": a["chapter"], "question": a["question"], "answered": 0, "correct": 0}
        )
        r["answered"] += 1
        r["correct"] += int(bool(a["correct"]))
        if not a["correct"]:
            wrong[a["question"]][a["choice"]] += 1
    out = []
    for qid, r in sorted(rows.items(), key=lambda kv: (kv[1]["chapter"], kv[0])):
        r["share"] = r["correct"] / r["answered"] if r["answered"] else 0.0
        r["wrong_choices"] = dict(wrong[qid].most_common())
        out.append(r)
    return out


def answers_csv(store: ClassStore, class_code: str) -> str:
    """Every answer of the class as CSV (one row per checked answer), for a spreadsheet."""
    buf = io.StringIO()
    cols = ["nickname", "chapter", "question", "choice", "correct", "first_try", "answered_at"]
    writer = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
    writer.writeheader()
    for a in store.answers(class_code):
        writer.writerow(a)
    return buf.getvalue()


def lab_rows(store: ClassStore, class_code: str, lab: str) -> list[dict]:
    """One row per lab run: the student and the run's figures flattened (for one chart of the class)."""
    return [{"nickname": r["nickname"], **r["figures"]} for r in store.lab_runs(class_code, lab)]
