"""Lesson text, quiz banks and UI strings: both languages agree, and the text teaches Triton correctly."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from triton_kitchen.core import lessons as L

LESSONS = L.LESSONS_DIR
SEED = Path(
    os.environ.get("TRITON_KITCHEN_SEED", "/work/shared/seed/triton-ensemble-http-grpc-tutorial.zh.txt")
)
CJK = re.compile(r"[\u4e00-\u9fff]")
LIVE_KEYS = {
    1: "repository_browser",
    2: "ensemble_editor",
    3: "patterns",
    4: "http_request",
    5: "grpc_message",
    6: "protocol_guide",
    7: "python_demo",
    8: "mistakes",
    9: "scheduler",
    10: "operations",
    11: "generation",
}
# The brief's list, under the names the app's code uses (ui/, views/, triton_kitchen.core.imaging codes).
REQUIRED_UI_KEYS = [
    *(f"page.ch{n}" for n in range(1, 12)),
    "page.lab_protocols",
    "page.lab_batching",
    "page.lab_flow",
    "nav.lessons",
    "nav.labs",
    "sidebar.server",
    "sidebar.mode_embedded",
    "sidebar.mode_remote",
    "sidebar.http_url",
    "sidebar.status_up",
    "sidebar.status_down",
    "sidebar.triton_version",
    "sidebar.models",
    "sidebar.ready",
    "sidebar.unavailable",
    "sidebar.restart",
    "sidebar.language",
    "sidebar.log",
    "image.sample",
    "image.upload",
    "image.camera",
    "classify.button",
    "classify.took",
    "quiz.check",
    "quiz.correct",
    "quiz.wrong",
    "quiz.progress",
    # plain-language errors: not an image, empty, truncated, image too large, upload too large, ...
    "error.not_an_image",
    "error.empty",
    "error.truncated",
    "error.image_too_large",
    "error.too_large",
    "error.upload_too_large",
    "error.server_unreachable",
    "error.server_starting",
    "error.model_not_ready",
    "error.wrong_tensor_name",
    "error.wrong_dtype",
    "error.wrong_shape",
    "error.bad_config",
    "error.config_syntax",
    "error.config_invalid",
    "error.timeout",
    "error.benchmark_stopped",
]


def lesson_files(lang: str) -> list[str]:
    return sorted(p.name for p in (LESSONS / lang).glob("*.md"))


def quiz_files(lang: str) -> list[str]:
    return sorted(p.name for p in (LESSONS / lang / "quiz").glob("*.toml"))


# --- both languages have the same shape -------------------------------------------------


def test_same_lesson_files_in_both_languages():
    zh, en = lesson_files("zh"), lesson_files("en")
    assert zh == en
    assert [name[:2] for name in zh] == [f"{n:02d}" for n in L.CHAPTERS]
    assert zh[-1] == "11-generation.md"
    assert quiz_files("zh") == quiz_files("en") == [f"{n:02d}.toml" for n in L.CHAPTERS]


@pytest.mark.parametrize("chapter", L.CHAPTERS)
def test_front_matter_agrees(chapter):
    metas = {}
    for lang in L.LANGS:
        meta, _ = L.parse_front_matter(L.lesson_path(chapter, lang).read_text(encoding="utf-8"))
        metas[lang] = meta
        assert set(meta) == set(L.FRONT_MATTER_KEYS), (lang, meta)
        assert int(meta["chapter"]) == chapter
        assert "\n" not in meta["summary"] and meta["summary"].strip()
    assert metas["zh"]["live"] == metas["en"]["live"] == LIVE_KEYS[chapter]


DEEP_SECTION_WORDS = 650


def _prose_words(markdown: str) -> int:
    """Words of prose, code blocks left out."""
    return len(re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL).split())


@pytest.mark.parametrize("chapter", L.CHAPTERS)
def test_lessons_load_with_sections_and_enough_text(chapter):
    zh, en = L.load_lesson(chapter, "zh"), L.load_lesson(chapter, "en")
    for lesson in (zh, en):
        assert isinstance(lesson, L.Lesson)
        assert lesson.chapter == chapter and lesson.title and lesson.summary
        assert len(lesson.body) >= 400
        assert lesson.sections and all(text.strip() for text in lesson.sections.values())
        assert "<!-- section" not in "".join(lesson.sections.values())
        assert "\n---\n" not in lesson.body[:5], "front matter leaked into the body"
    assert list(zh.sections) == list(en.sections), "pages place live elements by section key"
    assert zh.deep == en.deep and zh.deep <= set(zh.sections) - {L.INTRO_SECTION}
    # the main path (every section not marked deep) is a one-sitting read; each deep section one more sitting
    main = sum(_prose_words(text) for key, text in en.sections.items() if key not in en.deep)
    assert 400 <= main <= 900, f"English lesson {chapter}'s main path has {main} words of prose"
    for key in en.deep:
        words = _prose_words(en.sections[key])
        assert words <= DEEP_SECTION_WORDS, f"English lesson {chapter}'s deep section {key} has {words} words"
    cjk = len(CJK.findall(zh.body))
    assert cjk >= 500, f"Chinese lesson {chapter} has only {cjk} Chinese characters"


def test_list_lessons_in_order():
    for lang in L.LANGS:
        lessons = L.list_lessons(lang)
        assert [lesson.chapter for lesson in lessons] == list(L.CHAPTERS)
        assert all(lesson.lang == lang for lesson in lessons)


# --- quiz banks -------------------------------------------------------------------------


@pytest.mark.parametrize("chapter", L.CHAPTERS)
def test_quiz_banks_agree_and_are_valid(chapter):
    zh, en = L.load_quiz(chapter, "zh"), L.load_quiz(chapter, "en")
    assert len(zh) >= 6  # the course's minimum (7) is in test_quiz_enough_questions_and_scenarios_per_chapter
    assert [q.id for q in zh] == [q.id for q in en]
    assert len({q.id for q in zh}) == len(zh)
    for qz, qe in zip(zh, en, strict=True):
        assert qz.answer == qe.answer, f"{qz.id}: the answer index differs between languages"
        assert len(qz.choices) == len(qe.choices)
    for q in zh + en:
        assert q.chapter == chapter
        assert q.prompt.strip()
        assert len(q.choices) >= 2 and len(set(q.choices)) == len(q.choices), q.id
        assert 0 <= q.answer < len(q.choices), q.id
        assert len(q.explanation.strip()) >= 30, f"{q.id} needs an explanation"
        assert L.check_answer(q, q.answer)
        assert not any(L.check_answer(q, i) for i in range(len(q.choices)) if i != q.answer)
        assert not L.check_answer(q, None)


def test_quiz_answers_are_not_always_the_same_position():
    answers = [q.answer for ch in L.CHAPTERS for q in L.load_quiz(ch, "en")]
    assert len(set(answers)) >= 3


# Rules that keep each quiz a test of understanding, checked over the real banks.
MIN_QUESTIONS = 7
MIN_SCENARIOS = 3


def key_is_strictly_longest(q: L.Question) -> bool:
    return all(len(q.choices[q.answer]) > len(c) for i, c in enumerate(q.choices) if i != q.answer)


@pytest.mark.parametrize("lang", L.LANGS)
def test_quiz_every_choice_has_feedback(lang):
    missing = [
        q.id
        for ch in L.CHAPTERS
        for q in L.load_quiz(ch, lang)
        if len(q.why) != len(q.choices) or not all(w.strip() for w in q.why)
    ]
    assert not missing, f"{lang}: {len(missing)} questions lack a `why` per choice: {missing}"


@pytest.mark.parametrize("lang", L.LANGS)
def test_quiz_enough_questions_and_scenarios_per_chapter(lang):
    short = {}
    for ch in L.CHAPTERS:
        quiz = L.load_quiz(ch, lang)
        scenarios = sum(q.kind in ("scenario", "transfer") for q in quiz)  # transfer: a new scenario
        unmarked = sum(q.kind not in L.QUESTION_KINDS for q in quiz)  # every question says its kind
        if len(quiz) < MIN_QUESTIONS or scenarios < MIN_SCENARIOS or unmarked:
            short[ch] = f"{len(quiz)} questions, {scenarios} scenario, {unmarked} without a kind"
    assert not short, f"{lang}: need >= {MIN_QUESTIONS} questions, >= {MIN_SCENARIOS} scenarios: {short}"


@pytest.mark.parametrize("lang", L.LANGS)
def test_quiz_the_longest_choice_is_no_cue(lang):
    """The key is the strictly longest choice in at most a third of a language's questions, and in at
    most 2 of a chapter's."""
    per_chapter = {
        ch: [q.id for q in L.load_quiz(ch, lang) if key_is_strictly_longest(q)] for ch in L.CHAPTERS
    }
    longest = sum(len(ids) for ids in per_chapter.values())
    total = sum(len(L.load_quiz(ch, lang)) for ch in L.CHAPTERS)
    crowded = {ch: ids for ch, ids in per_chapter.items() if len(ids) > 2}
    assert 3 * longest <= total and not crowded, (
        f"{lang}: key strictly longest in {longest}/{total} ({longest / total:.0%}); chapters over 2: {crowded}"
    )


def test_key_is_strictly_longest():
    q = L.Question(id="q", prompt="p", choices=("aaa", "bb", "c"), answer=0, explanation="e")
    assert key_is_strictly_longest(q)
    assert not key_is_strictly_longest(L.Question("q", "p", ("aaa", "bbb"), 0, "e"))
    assert not key_is_strictly_longest(L.Question("q", "p", ("a", "bbb"), 0, "e"))


@pytest.mark.parametrize("chapter", L.CHAPTERS)
def test_quiz_languages_agree_on_ids_answers_kinds_and_choices(chapter):
    zh, en = L.load_quiz(chapter, "zh"), L.load_quiz(chapter, "en")
    shape = [[(q.id, q.answer, q.kind, len(q.choices), len(q.why)) for q in bank] for bank in (zh, en)]
    assert shape[0] == shape[1]


# --- UI strings -------------------------------------------------------------------------


def test_ui_keys_and_placeholders_agree():
    zh, en = L.ui_strings("zh"), L.ui_strings("en")
    assert set(zh) == set(en)
    for key in zh:
        assert L.placeholders(zh[key]) == L.placeholders(en[key]), key
        assert zh[key].strip() and en[key].strip(), key
    missing = [k for k in REQUIRED_UI_KEYS if k not in en]
    assert not missing


def test_ui_placeholders_format():
    for lang in L.LANGS:
        for key, template in L.ui_strings(lang).items():
            names = L.placeholders(template)
            if not names:  # shown as written, literal braces and all
                assert L.t(key, lang) == template
                continue
            values = {name: 7 for name in names}
            text = template.format(**values)  # literal braces must be escaped as {{ }}
            assert L.t(key, lang, **values) == text, (lang, key)


def test_required_placeholders():
    en = L.ui_strings("en")
    assert "ms" in L.placeholders(en["classify.took"])
    assert L.placeholders(en["quiz.progress"]) == {"done", "total"}
    assert L.placeholders(en["sidebar.triton_version"]) == {"version"}
    assert "12.3" in L.t("classify.took", "en", ms=12.34, protocol="gRPC", model="image_classifier")
    assert "12.3" in L.t("classify.took", "zh", ms=12.34, protocol="gRPC", model="image_classifier")
    assert L.t("quiz.progress", "zh", done=3, total=7).count("3/7") == 1


UI_CALL = re.compile(r"""\bt\(\s*["']([a-z0-9_]+(?:\.[a-z0-9_]+)+)["']""")


def _committed_sources(root: Path) -> dict[str, str]:
    """app.py, ui/*.py and views/*.py as committed (work in progress elsewhere does not count),
    or as on disk when this is not a git checkout."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "app.py", "ui/*.py", "views/*.py"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        return {
            name: subprocess.run(
                ["git", "show", f"HEAD:{name}"], cwd=root, capture_output=True, text=True, check=True
            ).stdout
            for name in listed
        }
    except (OSError, subprocess.CalledProcessError):
        paths = [root / "app.py", *root.glob("ui/*.py"), *root.glob("views/*.py")]
        return {str(p): p.read_text(encoding="utf-8") for p in paths if p.is_file()}


def test_every_key_the_app_uses_exists():
    sources = _committed_sources(LESSONS.parent)
    used = {key for text in sources.values() for key in UI_CALL.findall(text)}
    assert used, "found no t(...) calls to check"
    for lang in L.LANGS:
        missing = sorted(used - set(L.ui_strings(lang)))
        assert not missing, (lang, missing)


def test_every_image_error_code_has_a_message():
    imaging = pytest.importorskip("triton_kitchen.core.imaging")
    for lang in L.LANGS:
        strings = L.ui_strings(lang)
        assert not [code for code in imaging.ERROR_CODES if f"error.{code}" not in strings], lang


def test_t_falls_back_visibly():
    assert L.t("no.such.key", "zh") == "no.such.key"
    assert L.t("no.such.key", "en", x=1) == "no.such.key"
    # a missing argument leaves its placeholder instead of raising
    assert "{message}" in L.t("error.config_syntax", "en", line=3)
    assert "{ms:.1f}" in L.t("classify.took", "en")  # no arguments: the template itself, not a crash
    assert L.placeholders('{ key: "input" value: "x" } and {{escaped}}') == set()
    assert L.placeholders("{ms:.1f} ms, {a.b} {c[0]}") == {"ms", "a", "c"}
    assert L.t("page.ch1", "fr") == L.t("page.ch1", L.DEFAULT_LANG)
    assert L.t("page.ch1", "en-US") == L.ui_strings("en")["page.ch1"]


def test_ui_strings_returns_a_copy():
    strings = L.ui_strings("en")
    strings["page.ch1"] = "changed"
    assert L.ui_strings("en")["page.ch1"] != "changed"
    assert L.t("page.ch1", "en") != "changed"


# --- the text teaches the right thing ----------------------------------------------------

MAP_RE = re.compile(r'(input_map|output_map)\s*\{\s*key:\s*"([^"]+)"\s*value:\s*"([^"]+)"\s*\}')
NAME_RE = re.compile(r'name:\s*"([^"]+)"')


def ensemble_snippet(body: str) -> str:
    blocks = re.findall(r"```pbtxt\n(.*?)```", body, re.DOTALL)  # a whole config, not a mistake or fragment
    found = [b for b in blocks if 'platform: "ensemble"' in b and "ensemble_scheduling" in b]
    assert found, "chapter 2 must show an ensemble config snippet"
    return found[0]


@pytest.mark.parametrize("lang", L.LANGS)
def test_chapter2_config_snippet_maps_model_tensor_to_ensemble_tensor(lang):
    snippet = ensemble_snippet(L.load_lesson(2, lang).body)
    head = snippet.split("ensemble_scheduling")[0]
    ensemble_inputs = set(NAME_RE.findall(head.split("output")[0]))
    ensemble_outputs = set(NAME_RE.findall(head.split("output", 1)[1]))
    maps = MAP_RE.findall(snippet)
    produced = {value for kind, _, value in maps if kind == "output_map"}
    consumed = {value for kind, _, value in maps if kind == "input_map"}
    assert ensemble_inputs and ensemble_outputs and maps
    for kind, key, value in maps:
        # the value is always an ensemble tensor ...
        if kind == "input_map":
            assert value in ensemble_inputs | produced, (kind, key, value)
        else:
            assert value in ensemble_outputs | consumed, (kind, key, value)
        # ... and the key is the step model's own name, never an ensemble tensor
        assert key not in ensemble_inputs | ensemble_outputs | (produced - {key}), (kind, key, value)
    assert ensemble_outputs <= produced
    assert all("model_version: -1" in step for step in snippet.split("model_name")[1:])


def test_chapter2_prose_states_the_direction():
    en = " ".join(L.load_lesson(2, "en").body.split())
    zh = L.load_lesson(2, "zh").body
    assert re.search(r"\*\*key\*\* = the step model's own tensor name", en)
    assert re.search(r"\*\*value\*\* = the ensemble tensor name", en)
    assert "**key 是该步骤模型自己的张量名**" in zh
    assert "**value 是 ensemble 的张量名**" in zh
    # model_version: omitted means 0, not latest
    assert "-1" in en and "protobuf's default for an integer is 0" in en
    assert "默认值是 0" in zh


@pytest.mark.parametrize("lang", L.LANGS)
def test_facts_the_course_must_get_right(lang):
    body = {ch: L.load_lesson(ch, lang).body for ch in L.CHAPTERS}
    assert "4.8 MB" in body[3] and "300 MB" in body[3] and "BLS" in body[3]
    assert "binary_data=True" in body[4] and "Inference-Header-Content-Length" in body[4]
    assert "ModelStreamInfer" in body[5] and "decoupled: true" in body[5]
    assert "generate_stream" in body[6] and "Server-Sent Events" in body[6] and "perf_analyzer" in body[6]
    for name in (
        "ensemble_pipeline",
        "input_image",
        "output_label",
        "localhost:8000",
        "localhost:8001",
        "np.random.rand(1, 3, 224, 224)",
    ):
        assert name in body[7], name
    for marker in ("input_map", "generate_stream", "binary_data", "perf_analyzer", "BLS", "-1"):
        assert marker in body[8], marker


# --- written in our own words -------------------------------------------------------------


def zh_course_text() -> str:
    parts = [p.read_text(encoding="utf-8") for p in sorted((LESSONS / "zh").rglob("*")) if p.is_file()]
    return "\n".join(parts)


@pytest.mark.skipif(not SEED.exists(), reason="seed tutorial not available")
def test_no_seed_sentence_is_copied():
    seed = SEED.read_text(encoding="utf-8")
    ours = zh_course_text()
    copied = []
    for line in seed.splitlines():
        # whole lines and clauses of 20+ Chinese characters
        pieces = [line, *re.split(r"[。！？；，：、“”（）\s]", line)]
        for piece in pieces:
            if len(CJK.findall(piece)) >= 20 and piece in ours:
                copied.append(piece)
        # and any run of 20 characters that is mostly Chinese
        for i in range(len(line) - 19):
            window = line[i : i + 20]
            if len(CJK.findall(window)) >= 16 and window in ours:
                copied.append(window)
    assert not copied, copied[:5]


# --- loader API ---------------------------------------------------------------------------


def test_split_heading():
    assert L.split_heading("## The model repository\n\nText\nmore\n") == (
        "The model repository",
        "Text\nmore\n",
    )
    assert L.split_heading("\n### 1. Pipeline ##\nBody") == ("1. Pipeline", "Body")
    assert L.split_heading("Text first\n## Later heading\n") == ("", "Text first\n## Later heading\n")


@pytest.mark.parametrize("lang", L.LANGS)
def test_every_section_has_a_heading_and_text(lang):
    """Pages show a section's heading as its box's label and the rest inside (ui.lesson.lazy_box)."""
    for ch in L.CHAPTERS:
        for key, text in L.load_lesson(ch, lang).sections.items():
            heading, body = L.split_heading(text)
            assert heading and body.strip() and not body.lstrip().startswith("#"), (ch, key)


def test_sections_split_in_order():
    body = "Intro text\n\n<!-- section: a -->\nAlpha\n<!-- section: b -->\nBeta\n"
    assert L.split_sections(body) == {"intro": "Intro text\n", "a": "Alpha\n", "b": "Beta\n"}
    assert list(L.split_sections("<!-- section: x -->\nX\n")) == ["x"]
    marked = "<!-- section: a -->\nAlpha\n<!-- section: b deep -->\nBeta\n"
    assert L.split_sections(marked) == {"a": "Alpha\n", "b": "Beta\n"}
    assert L.deep_sections(marked) == {"b"}
    with pytest.raises(L.LessonError):
        L.split_sections("<!-- section: a -->\n1\n<!-- section: a -->\n2\n")


def test_front_matter_parser_rejects_bad_input():
    with pytest.raises(L.LessonError):
        L.parse_front_matter("no front matter")
    with pytest.raises(L.LessonError):
        L.parse_front_matter("---\ntitle: x\n")
    meta, body = L.parse_front_matter('---\ntitle: "Quoted: yes"\nchapter: 3\n---\nBody\n')
    assert meta == {"title": "Quoted: yes", "chapter": "3"} and body == "Body\n"


def test_bad_chapter_or_language():
    with pytest.raises(L.LessonError):
        L.load_lesson(len(L.CHAPTERS) + 1, "en")
    with pytest.raises(L.LessonError):
        L.load_lesson(1, "fr")
    with pytest.raises(L.LessonError):
        L.load_quiz(0, "zh")
    assert L.normalize_lang("zh-CN") == "zh" and L.normalize_lang("EN_us") == "en"
    assert L.normalize_lang(None) == L.DEFAULT_LANG == "zh" and L.normalize_lang("xx") == "zh"


def test_loading_is_cached():
    assert L.load_lesson(1, "zh") is L.load_lesson(1, "zh")
    assert L.load_quiz(1, "en") == L.load_quiz(1, "en")


def test_lessons_dir_is_relative_to_the_package():
    assert L.LESSONS_DIR == Path(L.__file__).resolve().parents[2] / "lessons"


def test_quiz_progress_records_and_serialises():
    quiz = L.load_quiz(2, "en")
    progress = L.QuizProgress()
    assert progress.answered(2) == 0 and not progress.done(2, len(quiz))
    assert progress.answer(quiz[0], quiz[0].answer) is True
    wrong = (quiz[1].answer + 1) % len(quiz[1].choices)
    assert progress.answer(quiz[1], wrong) is False
    assert progress.answered(2) == 2 and progress.correct(2) == 1
    assert progress.choice(2, quiz[1].id) == wrong and progress.choice(2, "nope") is None
    assert progress.checked(2, quiz[1].id) and not progress.checked(2, quiz[2].id)
    restored = L.QuizProgress.from_dict(json.loads(json.dumps(progress.to_dict())))
    assert restored == progress and restored.correct(2) == 1
    for q in quiz:
        restored.answer(q, q.answer)
    # the first checked answer counts: quiz[1] stays wrong
    assert restored.done(2, len(quiz)) and restored.correct(2) == len(quiz) - 1
    assert restored.choice(2, quiz[1].id) == wrong
    restored.reset(2)
    assert restored.answered(2) == 0 and progress.answered(2) == 2
    assert restored.answer(quiz[1], quiz[1].answer) is True and restored.correct(2) == 1  # a fresh start
    progress.reset()
    assert progress.to_dict() == {}


def test_quiz_progress_first_try_only():
    q = L.load_quiz(3, "zh")[0]
    wrong = (q.answer + 1) % len(q.choices)
    progress = L.QuizProgress()
    assert progress.answer(q, wrong) is False
    assert progress.answer(q, q.answer) is True  # this choice is right, but it is not the first try
    assert progress.correct(3) == 0 and progress.answered(3) == 1 and progress.choice(3, q.id) == wrong
    other = L.QuizProgress()
    other.answer(q, q.answer)
    other.answer(q, wrong)
    assert other.correct(3) == 1 and other.choice(3, q.id) == q.answer


def test_shuffled_order_is_a_stable_permutation():
    for n in range(0, 7):
        assert sorted(L.shuffled_order(5, "q", n)) == list(range(n))
    assert L.shuffled_order(5, "ch1-ports", 4) == L.shuffled_order(5, "ch1-ports", 4)
    assert L.shuffled_order("5", "ch1-ports", 4) == L.shuffled_order(5, "ch1-ports", 4)
    # the same in another process (a str seed does not go through hash(), so PYTHONHASHSEED is irrelevant)
    code = "import triton_kitchen.core.lessons as L; print(list(L.shuffled_order(5, 'ch1-ports', 6)))"
    root = Path(L.__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(list(L.shuffled_order(5, "ch1-ports", 6)))
    # it depends on the seed and on the question, and it does shuffle
    orders = {L.shuffled_order(seed, "q", 4) for seed in range(200)}
    assert len(orders) == 24  # every order of 4 choices occurs
    assert len({L.shuffled_order(7, f"q{i}", 4) for i in range(50)}) > 10
    first = [L.shuffled_order(seed, "q", 4)[0] for seed in range(400)]
    assert all(60 < first.count(i) < 140 for i in range(4)), [first.count(i) for i in range(4)]


BANK_HEAD = """
[[question]]
id = "a"
prompt = "p"
choices = ["x", "y", "z"]
answer = 1
explanation = "e"
"""


@pytest.fixture
def tmp_bank(tmp_path, monkeypatch):
    """Write chapter 1's bank for 'en' into tmp_path; load_quiz reads it from there."""
    path = tmp_path / "01.toml"
    real = L.quiz_path
    monkeypatch.setattr(L, "quiz_path", lambda ch, lang: path if (ch, lang) == (1, "en") else real(ch, lang))
    L._load_quiz.cache_clear()

    def write(text: str) -> Path:
        L._load_quiz.cache_clear()
        path.write_text(text, encoding="utf-8")
        return path

    yield write
    monkeypatch.undo()
    L._load_quiz.cache_clear()


def test_quiz_why_and_kind_are_optional(tmp_bank):
    tmp_bank(BANK_HEAD)
    (q,) = L.load_quiz(1, "en")
    assert q.why == () and q.kind == "" and q.answer == 1
    tmp_bank(BANK_HEAD + 'why = ["wx", "wy", "wz"]\nkind = "scenario"\n')
    (q,) = L.load_quiz(1, "en")
    assert q.why == ("wx", "wy", "wz") and q.kind == "scenario"


@pytest.mark.parametrize(
    ("extra", "message"),
    [('why = ["wx", "wy"]\n', "why has 2 entries for 3 choices"), ('kind = "trivia"\n', "kind 'trivia'")],
)
def test_quiz_bad_why_or_kind_is_an_error(tmp_bank, extra, message):
    tmp_bank(BANK_HEAD + extra)
    with pytest.raises(L.LessonError, match=message):
        L.load_quiz(1, "en")


def test_lessons_module_does_not_import_streamlit():
    code = "import sys, triton_kitchen.core.lessons as L; L.list_lessons('zh'); print('streamlit' in sys.modules)"
    root = Path(L.__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- the map of a request's life ------------------------------------------------------------


def test_every_chapter_highlights_part_of_a_requests_life():
    from triton_kitchen.core import request_map

    assert set(request_map.CHAPTER_STAGES) == set(L.CHAPTERS)
    for chapter in L.CHAPTERS:
        stages = request_map.stages(chapter)
        assert [s for s, _ in stages] == list(request_map.STAGES)
        assert any(on for _, on in stages), chapter
        assert set(request_map.CHAPTER_STAGES[chapter]) <= set(request_map.STAGES)
    assert all(on for _, on in request_map.stages(8))  # common mistakes cover the whole life
    assert not request_map.stages(4)[2][1]  # HTTP/REST is not about the ensemble scheduler
    for lang in L.LANGS:
        for stage in (*request_map.STAGES, "title"):
            assert L.t(f"map.{stage}", lang).strip(), (lang, stage)
