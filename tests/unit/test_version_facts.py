"""Version facts as data (triton_kitchen/core/version_facts.py, lessons/<lang>/version_facts.toml): every row has
its words in both languages, and every lesson paragraph, callout, quiz item or verdict string that states a
row's fact names the range it holds for."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from triton_kitchen.core.version_facts import FACTS, RANGE_MARKER, differences, marker_covers, texts
from triton_kitchen.core.versions import EMBEDDED, NEWEST, TritonVersion

LESSONS = Path(__file__).resolve().parents[2] / "lessons"
LANGS = ("zh", "en")
V = TritonVersion.parse


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def units(lang: str) -> list[tuple[str, str]]:
    """(where, text) for every lesson paragraph or callout, quiz string (prompt, choice, explanation, note) and
    ui.toml string (the labs' verdicts among them), whitespace folded to one space."""
    out = []
    for path in sorted((LESSONS / lang).glob("*.md")):
        for i, para in enumerate(re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))):
            out.append((f"{path.name} ¶{i + 1}", para))
    for path in [*sorted((LESSONS / lang / "quiz").glob("*.toml")), LESSONS / lang / "ui.toml"]:
        with open(path, "rb") as f:
            data = tomllib.load(f)
        out += [(path.name, s) for s in _strings(data)]
    return [(where, re.sub(r"\s+", " ", text)) for where, text in out]


@pytest.mark.parametrize("lang", LANGS)
def test_every_fact_has_its_words(lang):
    table = texts(lang)
    assert set(table) == {f.key for f in FACTS}
    for fact in FACTS:
        row = table[fact.key]
        assert row["fact"] and isinstance(row["phrases"], list), fact.key
        if fact.changed and fact.since is not None:
            assert "{version}" in row["differs"], fact.key
            assert str(fact.since) in row["differs"] and str(fact.since) in row["fact"], fact.key
        if not fact.changed:  # a row with no difference says so
            assert row["fact"].startswith("No difference" if lang == "en" else "没有差别"), fact.key
            assert "differs" not in row and fact.until == NEWEST


def test_the_sources_name_where_each_fact_is_seen():
    for fact in FACTS:
        assert re.search(r"r\d\d\.\d\d|commit [0-9a-f]{7}|developer\.nvidia\.com", fact.source), fact.key


def test_what_differs_from_the_embedded_2_51():
    assert differences(EMBEDDED) == []
    keys = lambda v: {f.key for f in differences(V(v))}  # noqa: E731
    assert keys("2.52") == {"compute_capability_75", "model_metrics"}
    assert "client_shm" not in keys("2.67") and "client_shm" in keys("2.68")
    assert keys("26.08") == {f.key for f in FACTS if f.changed and f.since is not None}
    assert not any(f.key in keys("2.72") for f in FACTS if not f.changed)


@pytest.mark.parametrize("lang", LANGS)
def test_a_stated_fact_names_its_range(lang):
    """A paragraph, callout, quiz item or verdict with a row's phrase carries "Triton 2.51–2.67" / "Triton 2.68+"
    (zh: "Triton 2.68 起") for that row's boundary; each phrase is one the lessons really use."""
    everything = units(lang)
    table = texts(lang)
    unmarked, unused = [], []
    for fact in FACTS:
        for phrase in table[fact.key]["phrases"]:
            found = [(where, text) for where, text in everything if phrase in text]
            if not found:
                unused.append((fact.key, phrase))
            unmarked += [
                (fact.key, where, text[:120]) for where, text in found if not marker_covers(text, fact)
            ]
    assert unused == [], f"phrases no lesson uses (update lessons/{lang}/version_facts.toml): {unused}"
    assert unmarked == [], f"stated without its version range: {unmarked}"


def test_the_range_marker_in_both_languages():
    assert RANGE_MARKER.search("(Triton 2.51–2.67)") and RANGE_MARKER.search("(Triton 2.68+)")
    assert RANGE_MARKER.search("（Triton 2.68 起）") and not RANGE_MARKER.search("Triton 2.68")
    shm = next(f for f in FACTS if f.key == "client_shm")
    assert marker_covers("x (Triton 2.51–2.67)", shm) and marker_covers("（Triton 2.68 起）", shm)
    assert not marker_covers("(Triton 2.51–2.55)", shm)


def test_the_sidebar_says_what_differs_on_a_server_of_another_version():
    from triton_kitchen.core.version_facts import server_notes

    assert (
        server_notes("2.51.0", "en") == [] and server_notes("", "zh") == [] and server_notes("?", "en") == []
    )
    notes = server_notes("2.68.0", "en")
    assert any(n.startswith("This server is Triton 2.68: client shared memory is off unless") for n in notes)
    assert not any("client shared memory" in n for n in server_notes("2.60.0", "en"))
    assert any("--allow-client-shm=true" in n and "2.68" in n for n in server_notes("2.72.0", "zh"))


def _status_box(lang: str, version: str) -> None:
    import streamlit as st

    from triton_kitchen.tools.repository import ModelState, ServerStatus
    from ui import sidebar

    st.query_params["lang"] = lang
    sidebar._status(
        ServerStatus(up=True, url="gpu-box:8000", version=version, models=[ModelState("m", "1", "READY")])
    )


@pytest.mark.app
@pytest.mark.parametrize("lang", LANGS)
def test_the_sidebar_shows_the_servers_version_and_what_differs(lang):
    from streamlit.testing.v1 import AppTest

    from triton_kitchen.core.version_facts import server_notes

    for version, expected in (("2.51.0", []), ("2.68.0", server_notes("2.68.0", lang))):
        at = AppTest.from_function(_status_box, args=(lang, version), default_timeout=30)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert f"Triton {version}" in at.success[0].value
        notes = [c.value for c in at.caption if "Triton 2.68" in c.value]
        assert notes == expected
    assert expected and any("--allow-client-shm=true" in n for n in expected)
