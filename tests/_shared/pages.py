"""Pages of the app through AppTest, for the live page checks (batching, protocol and flow labs, sidebar, ui
conventions): ``page`` opens one after a run, ``frames`` reads its tables, ``assert_human_table`` checks one is
for people (no raw column names, a dash for a missing value, thousands separators)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

from conftest import switch_page
from streamlit.testing.v1 import AppTest

from triton_kitchen.core import lessons

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 60
SNAKE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")


def tz(key: str, **kw) -> str:
    return lessons.t(key, "zh", **kw)


def page(path: str | None, lang: str = "zh", state: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    for k, v in (state or {}).items():
        at.session_state[k] = v
    if path:
        switch_page(at, path)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def frames(at: AppTest) -> list:
    """Every dataframe shown, with its column labels and its column config (the formats)."""
    out = []
    for df in at.dataframe:
        cfg = json.loads(df.proto.columns) if df.proto.columns else {}
        out.append(SimpleNamespace(value=df.value, config=cfg, placeholder=df.proto.placeholder))
    return out


def assert_human_table(table) -> None:
    for col in table.value.columns:
        assert col and not SNAKE.match(str(col)), f"raw column name {col!r}"
    assert table.placeholder == "—"  # a missing value is not shown as "None"
    for col in table.value.columns:
        if table.value[col].dtype.kind in "if":
            fmt = (table.config.get(f"col:name:{col}") or table.config.get(col) or {}).get("type_config", {})
            assert "," in str(fmt.get("format", "")), f"{col}: no thousands separator ({fmt})"
