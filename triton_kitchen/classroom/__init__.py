"""The class: students without accounts, where their answers and lab results last, and what the class did.

``identity`` (a nickname and a class code, checked), ``store`` (:class:`ClassStore` on SQLite or PostgreSQL, with
migrations and retried writes), ``report`` (the ``class report`` document, the teacher's tables and CSV), ``figures`` (what a lab run keeps).
"""

from triton_kitchen.classroom import figures
from triton_kitchen.classroom.identity import IdentityError, Student, student_from, valid, valid_nickname
from triton_kitchen.classroom.report import answers_csv, class_report, lab_rows, question_table
from triton_kitchen.classroom.store import ClassStore, default_url, shared_store

__all__ = [
    "ClassStore",
    "IdentityError",
    "Student",
    "answers_csv",
    "class_report",
    "default_url",
    "figures",
    "lab_rows",
    "question_table",
    "shared_store",
    "student_from",
    "valid",
    "valid_nickname",
]
