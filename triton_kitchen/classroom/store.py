"""Where a class's quiz answers and lab results last: SQLite by default, PostgreSQL for several app processes.

``TRITON_KITCHEN_DATABASE_URL`` takes a URL as SQLAlchemy writes it (``sqlite:////abs/path.db``,
``postgresql://user@host/db``); without it the app keeps ``classroom.db`` in its cache folder.  SQLite runs in
WAL mode with a busy timeout, so readers never block the writer.  The schema is created and upgraded by the
numbered migrations below (the ``schema_version`` table says how far a database is).  Every write is one small
transaction with a client-made id (``INSERT ... ON CONFLICT DO NOTHING``), retried on contention: a retry after a
lost reply cannot count an answer twice, and no answer is dropped.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from dataclasses import dataclass
from functools import cache

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    delete,
    event,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from triton_kitchen.classroom.identity import Student
from triton_kitchen.core.settings import settings

log = logging.getLogger(__name__)

RETRIES = 8  # a write is tried this many times on contention before the error reaches the caller

meta = MetaData()
schema_version = Table("schema_version", meta, Column("version", Integer, nullable=False))
students = Table(
    "students",
    meta,
    Column("class_code", String(32), primary_key=True),
    Column("nickname", String(32), primary_key=True),
    Column("page", String(64), nullable=False, default=""),
    Column("first_seen", Float, nullable=False),
    Column("last_seen", Float, nullable=False),
)
quiz_answers = Table(
    "quiz_answers",
    meta,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("answer_id", String(36), nullable=False, unique=True),
    Column("class_code", String(32), nullable=False, index=True),
    Column("nickname", String(32), nullable=False),
    Column("chapter", Integer, nullable=False),
    Column("question", String(64), nullable=False),
    Column("choice", Integer, nullable=False),
    Column("correct", Boolean, nullable=False),
    Column("first_try", Boolean, nullable=False),
    Column("answered_at", Float, nullable=False),
)
lab_runs = Table(
    "lab_runs",
    meta,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(36), nullable=False, unique=True),
    Column("class_code", String(32), nullable=False, index=True),
    Column("nickname", String(32), nullable=False),
    Column("lab", String(32), nullable=False),
    Column("figures", Text, nullable=False),  # JSON: what the lab measured
    Column("ran_at", Float, nullable=False),
)


def _migration_1(conn) -> None:
    for table in (students, quiz_answers, lab_runs):
        table.create(conn, checkfirst=True)


MIGRATIONS = [_migration_1]  # index + 1 is the version a migration brings a database to


def default_url() -> str:
    from triton_kitchen.core.server import cache_root

    return settings().database_url or f"sqlite:///{cache_root() / 'classroom.db'}"


def _is_contention(exc: Exception) -> bool:
    text = str(exc).lower()
    return any(
        s in text
        for s in ("database is locked", "busy", "could not serialize", "deadlock", "connection", "closed")
    )


def _retry(fn, *args):
    """Run one transaction, again after a short random wait when the database is busy or the link dropped."""
    for attempt in range(RETRIES):
        try:
            return fn(*args)
        except (OperationalError, DBAPIError) as exc:
            if attempt == RETRIES - 1 or not _is_contention(exc):
                raise
            log.info("database busy (%s); retry %d", type(exc).__name__, attempt + 1)
            time.sleep(min(2.0, 0.02 * 2**attempt) * (0.5 + random.random()))
    return None  # unreachable


@dataclass(frozen=True)
class Answer:
    chapter: int
    question: str
    choice: int
    correct: bool
    first_try: bool


class ClassStore:
    """One database of classes: students, their quiz answers and lab runs."""

    def __init__(self, url: str | None = None) -> None:
        self.url = url or default_url()
        self.engine: Engine = create_engine(self.url, pool_pre_ping=True, future=True)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        _retry(self._migrate)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def _insert(self, table: Table):
        return (pg_insert if self.dialect == "postgresql" else sqlite_insert)(table)

    def _migrate(self) -> None:
        with self.engine.begin() as conn:
            schema_version.create(conn, checkfirst=True)
            row = conn.execute(select(schema_version.c.version)).first()
            current = row[0] if row else 0
            for version, step in enumerate(MIGRATIONS[current:], start=current + 1):
                step(conn)
                if row is None:
                    conn.execute(schema_version.insert().values(version=version))
                    row = (version,)
                else:
                    conn.execute(schema_version.update().values(version=version))

    def version(self) -> int:
        with self.engine.connect() as conn:
            return conn.execute(select(schema_version.c.version)).scalar_one()

    # -- writes ----------------------------------------------------------------------------------------
    def seen(self, student: Student, page: str | None = None) -> None:
        """The student is here now: on ``page`` (its URL path, "" for the welcome page) when a page view says
        so; ``None`` (an answer or a lab run) keeps the page the student was last seen on."""
        now = time.time()

        def tx():
            with self.engine.begin() as conn:
                stmt = self._insert(students).values(
                    class_code=student.class_code,
                    nickname=student.nickname,
                    page=page or "",
                    first_seen=now,
                    last_seen=now,
                )
                changed = {"last_seen": now} if page is None else {"page": page, "last_seen": now}
                conn.execute(
                    stmt.on_conflict_do_update(index_elements=["class_code", "nickname"], set_=changed)
                )

        _retry(tx)

    def record_answer(
        self,
        student: Student,
        chapter: int,
        question: str,
        choice: int,
        correct: bool,
        answer_id: str | None = None,
    ) -> str:
        """Store one checked answer (first try when the student had none for ``question``); returns its id,
        the same id makes a repeated call a no-op."""
        answer_id = answer_id or str(uuid.uuid4())
        now = time.time()

        def tx():
            with self.engine.begin() as conn:
                earlier = conn.execute(
                    select(func.count())
                    .select_from(quiz_answers)
                    .where(
                        quiz_answers.c.class_code == student.class_code,
                        quiz_answers.c.nickname == student.nickname,
                        quiz_answers.c.question == question,
                        quiz_answers.c.answer_id != answer_id,
                    )
                ).scalar_one()
                conn.execute(
                    self._insert(quiz_answers)
                    .values(
                        answer_id=answer_id,
                        class_code=student.class_code,
                        nickname=student.nickname,
                        chapter=int(chapter),
                        question=question,
                        choice=int(choice),
                        correct=bool(correct),
                        first_try=earlier == 0,
                        answered_at=now,
                    )
                    .on_conflict_do_nothing(index_elements=["answer_id"])
                )

        self.seen(student)
        _retry(tx)
        return answer_id

    def record_lab_run(self, student: Student, lab: str, figures: dict, run_id: str | None = None) -> str:
        """Store what one lab run measured (plain numbers and strings)."""
        run_id = run_id or str(uuid.uuid4())
        now = time.time()
        payload = json.dumps(figures, sort_keys=True, default=str)

        def tx():
            with self.engine.begin() as conn:
                conn.execute(
                    self._insert(lab_runs)
                    .values(
                        run_id=run_id,
                        class_code=student.class_code,
                        nickname=student.nickname,
                        lab=lab,
                        figures=payload,
                        ran_at=now,
                    )
                    .on_conflict_do_nothing(index_elements=["run_id"])
                )

        self.seen(student)
        _retry(tx)
        return run_id

    def reset_class(self, class_code: str) -> int:
        """Forget a class: its students, answers and lab runs. Returns how many rows went."""

        def tx():
            gone = 0
            with self.engine.begin() as conn:
                for table in (quiz_answers, lab_runs, students):
                    gone += conn.execute(delete(table).where(table.c.class_code == class_code)).rowcount or 0
            return gone

        return _retry(tx)

    # -- reads -----------------------------------------------------------------------------------------
    def first_answers(self, student: Student) -> list[Answer]:
        """The student's first checked answer of each question (what the quiz shows as locked)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(quiz_answers)
                .where(
                    quiz_answers.c.class_code == student.class_code,
                    quiz_answers.c.nickname == student.nickname,
                    quiz_answers.c.first_try.is_(True),
                )
                .order_by(quiz_answers.c.id)
            ).mappings()
            return [Answer(r["chapter"], r["question"], r["choice"], r["correct"], True) for r in rows]

    def latest_answers(self, student: Student) -> list[Answer]:
        """The student's latest checked answer of each question (after a quiz reset, the new one)."""
        latest: dict[str, Answer] = {}
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(quiz_answers)
                .where(
                    quiz_answers.c.class_code == student.class_code,
                    quiz_answers.c.nickname == student.nickname,
                )
                .order_by(quiz_answers.c.id)
            ).mappings()
            for r in rows:
                latest[r["question"]] = Answer(
                    r["chapter"], r["question"], r["choice"], r["correct"], r["first_try"]
                )
        return list(latest.values())

    def classes(self) -> list[str]:
        with self.engine.connect() as conn:
            return [
                r[0]
                for r in conn.execute(
                    select(students.c.class_code).distinct().order_by(students.c.class_code)
                )
            ]

    def answers(self, class_code: str | None = None) -> list[dict]:
        stmt = select(quiz_answers).order_by(quiz_answers.c.id)
        if class_code is not None:
            stmt = stmt.where(quiz_answers.c.class_code == class_code)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(stmt).mappings()]

    def lab_runs(self, class_code: str | None = None, lab: str | None = None) -> list[dict]:
        stmt = select(lab_runs).order_by(lab_runs.c.id)
        if class_code is not None:
            stmt = stmt.where(lab_runs.c.class_code == class_code)
        if lab is not None:
            stmt = stmt.where(lab_runs.c.lab == lab)
        with self.engine.connect() as conn:
            out = []
            for r in conn.execute(stmt).mappings():
                row = dict(r)
                row["figures"] = json.loads(row["figures"])
                out.append(row)
            return out

    def students(self, class_code: str | None = None) -> list[dict]:
        stmt = select(students).order_by(students.c.class_code, students.c.nickname)
        if class_code is not None:
            stmt = stmt.where(students.c.class_code == class_code)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(stmt).mappings()]

    def dispose(self) -> None:
        self.engine.dispose()


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=5000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


@cache
def shared_store(url: str | None = None) -> ClassStore:
    """One store per URL per process (its engine pools connections for every session)."""
    return ClassStore(url)
