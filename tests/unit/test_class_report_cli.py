"""``class report`` reads a class database and never makes one: with none there it says so, names where it
looked, and exits non-zero; with one it names the database it read (on stderr, so ``--json`` stays one document)."""

from __future__ import annotations

import contextlib
import io
import json

from triton_kitchen.classroom import ClassStore
from triton_kitchen.cli.main import main
from triton_kitchen.core.settings import CACHE_ENV, DATABASE_URL_ENV


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_no_database_is_said_and_not_created(tmp_path):
    db = tmp_path / "classroom.db"
    code, out, err = _run(["class", "report", "--database-url", f"sqlite:///{db}"])
    assert code == 1 and out == ""
    assert f"there is none at {db}" in err and "nothing was created" in err
    assert not db.exists()


def test_the_default_database_is_not_created_either(tmp_path, monkeypatch):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    code, _, err = _run(["class", "report", "--json"])
    assert code == 1 and "classroom.db" in err
    assert not (tmp_path / "cache" / "classroom.db").exists()


def test_an_existing_database_is_named_and_reported(tmp_path):
    url = f"sqlite:///{tmp_path / 'class.db'}"
    ClassStore(url).dispose()  # an empty class database: 0 of everything, and that is an answer
    code, out, err = _run(["class", "report", "--database-url", url, "--json"])
    assert code == 0 and json.loads(out)["students"] == 0
    assert f"class database: {url}" in err
