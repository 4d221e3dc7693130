"""Lessons as tests: the configs, quoted Triton messages and figures in lessons/<lang>/NN-*.md are checked
against the app's own code, the real model repository and (where it takes one) the real server.

Conventions a lesson follows (both languages, same fences in the same order):

- Every fenced code block names its language in the info string (```` ```pbtxt ````, ```` ```python ````,
  ```` ```text ```` ...). A second word marks the block's role; Streamlit highlights by the first word.
- ```` ```pbtxt ````: a whole ``config.pbtxt``. It is checked as if it replaced the model named by its
  ``name:`` in ``model_repository/``, by the ch2 editor's checker (``repository.check_ensemble_text``) and by
  ``python -m triton_kitchen check`` (``triton_kitchen.cli.check.check_paths`` on a repository where only that file
  differs). Both must find no error.
- ```` ```pbtxt mistake ````: a config that is wrong on purpose. Both checkers must report an error, and the
  lesson names it: the first italic quotation *"…"* after the block, in the same section, must be part of
  the Triton wording the checker predicts for one of the errors.
- ```` ```pbtxt fragment ````: a piece of a config (one field, one map line). It is skipped by the checkers
  (it is not a whole config) but must still parse as a ``ModelConfig`` or as one ensemble ``step``.
- *"…"* (italic, in double quotes) is Triton's own wording. Each must be a message Triton 2.51 gives: one
  recorded in the Triton-verified corpus (tests/corpus/*/case.json; a quote may stop early), where the
  placeholders E, M, X, x, m and the repository's model names (and tensor names with an underscore) stand
  for any name; or the checker's wording for one of the lesson's mistake blocks.
- ```` ```protobuf ````: a ``.proto`` message; its field names and numbers must be tritonclient's.

Figures: every number a lesson states about bytes, ratios, characters per number, counts or times is
recomputed here from the code that produces it (``requests_view`` builds the real HTTP body and gRPC
message, ``repository``/``ensemble`` read the configs), or asked of the real server, or the lesson words
it as measured on a page that measures it (the batching and protocol labs). Hypothetical numbers
("if inference takes, say, 20 ms") are worded as such.

Here the tests that need no server, app or browser; the others: tests/live/test_lesson_content_live.py.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from _shared.lesson_content import FENCE, fences, lesson_body, lesson_prose, normalized
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2, service_pb2

from triton_kitchen.cli.check import check_paths
from triton_kitchen.core import config, ensemble
from triton_kitchen.core import lessons as L
from triton_kitchen.core.samples import SAMPLE_PHOTOS, sample_jpeg
from triton_kitchen.labs import requests_view as rv
from triton_kitchen.tools import repository as repo

REPO = repo.DEFAULT_REPOSITORY
CORPUS = Path(__file__).resolve().parents[1] / "corpus"
QUOTE = re.compile(r'\*"(.+?)"\*', re.DOTALL)
ROLES = {"", "mistake", "fragment"}
PLACEHOLDERS = {"E", "M", "X", "x", "m"}


def pbtxt_blocks(role: str | None = None) -> list[tuple[str, int, int, str, str]]:
    """(lang, chapter, index, role, code) of every pbtxt block of every lesson."""
    found = []
    for lang in L.LANGS:
        for chapter in L.CHAPTERS:
            for i, (language, r, code, _) in enumerate(fences(lesson_body(chapter, lang))):
                if language == "pbtxt" and (role is None or r == role):
                    found.append((lang, chapter, i, r, code))
    return found


def _ids(blocks) -> list[str]:
    return [f"{lang}-ch{ch}-block{i}" for lang, ch, i, *_ in blocks]


def _quote_after(chapter: int, lang: str, index: int) -> str | None:
    """The first *"…"* after fenced block ``index``, within the block's section."""
    lesson = L.load_lesson(chapter, lang)
    end = fences(lesson.body)[index][3]
    rest = lesson.body[end:]
    marker = re.search(r"^<!--\s*section:", rest, re.MULTILINE)
    rest = rest[: marker.start()] if marker else rest
    m = QUOTE.search(FENCE.sub(" ", rest))
    return normalized(m.group(1)) if m else None


def _model_name(code: str) -> str:
    m = re.search(r'^\s*name:\s*"([^"]+)"', code, re.MULTILINE)
    assert m, "a whole config names its model"
    return m.group(1)


def _checker_problems(code: str, tmp_path: Path) -> tuple[list, list]:
    """Errors from the editor's checker and from `check` on a copy of the repository with this config."""
    name = _model_name(code)
    editor = [p for p in repo.check_ensemble_text(code, name=name).problems if p.severity == "error"]
    copy = tmp_path / "model_repository"
    copy.mkdir()
    for model in REPO.iterdir():
        if model.name != name:
            (copy / model.name).symlink_to(model, target_is_directory=model.is_dir())
            continue
        (copy / name).mkdir()
        for child in model.iterdir():
            if child.name != "config.pbtxt":
                (copy / name / child.name).symlink_to(child, target_is_directory=child.is_dir())
    if not (copy / name).exists():  # a model the repository does not have
        (copy / name / "1").mkdir(parents=True)
    (copy / name / "config.pbtxt").write_text(code, encoding="utf-8")
    cli = [p for p in check_paths([str(copy / name)]) if p.severity == "error"]
    return editor, cli


# --- every block says what it is ----------------------------------------------------------------


@pytest.mark.parametrize("chapter", L.CHAPTERS)
def test_every_fence_names_its_language_and_both_languages_agree(chapter):
    kinds = {}
    for lang in L.LANGS:
        blocks = fences(lesson_body(chapter, lang))
        body = lesson_body(chapter, lang)
        assert body.count("```") == 2 * len(blocks), f"{lang} ch{chapter}: an unclosed or inline fence"
        for language, role, code, _ in blocks:
            assert language, f"{lang} ch{chapter}: a fence without a language:\n{code[:80]}"
            assert role in ROLES, f"{lang} ch{chapter}: unknown role {role!r} (known: {sorted(ROLES)})"
            assert not role or language == "pbtxt", "roles are for pbtxt blocks"
        kinds[lang] = [(language, role) for language, role, *_ in blocks]
    assert kinds["zh"] == kinds["en"]


def test_the_conventions_are_in_use():
    roles = {r for *_, r, _ in pbtxt_blocks()}
    assert {"", "mistake", "fragment"} <= roles
    assert len(pbtxt_blocks("")) >= 4  # ch1's classifier and ch2's example, in both languages


# --- configs --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "chapter", "index", "role", "code"), pbtxt_blocks(""), ids=_ids(pbtxt_blocks(""))
)
def test_whole_configs_pass_both_checkers(lang, chapter, index, role, code, tmp_path):
    editor, cli = _checker_problems(code, tmp_path)
    assert not editor, [p.message for p in editor]
    assert not cli, [p.message for p in cli]


@pytest.mark.parametrize(
    ("lang", "chapter", "index", "role", "code"), pbtxt_blocks("mistake"), ids=_ids(pbtxt_blocks("mistake"))
)
def test_mistakes_fail_with_the_error_the_lesson_names(lang, chapter, index, role, code, tmp_path):
    quote = _quote_after(chapter, lang, index)
    assert quote, f'{lang} ch{chapter}: a mistake block is followed by Triton\'s words in *"…"*'
    editor, cli = _checker_problems(code, tmp_path)
    assert editor and cli, "a mistake block must fail"
    assert any(quote in normalized(p.triton_message or "") for p in editor), (
        quote,
        [p.triton_message for p in editor],
    )
    assert any(quote in normalized(p.triton_message or "") for p in cli), (
        quote,
        [p.triton_message for p in cli],
    )


@pytest.mark.parametrize(
    ("lang", "chapter", "index", "role", "code"), pbtxt_blocks("fragment"), ids=_ids(pbtxt_blocks("fragment"))
)
def test_fragments_parse(lang, chapter, index, role, code):
    for message in (model_config_pb2.ModelConfig(), model_config_pb2.ModelEnsembling.Step()):
        try:
            text_format.Parse(code, message)
            return
        except text_format.ParseError:
            continue
    pytest.fail(f"{lang} ch{chapter}: fragment is neither a ModelConfig nor an ensemble step:\n{code}")


@pytest.mark.parametrize("lang", L.LANGS)
def test_chapter1_shows_the_real_classifier_config(lang):
    shown = [
        code for language, role, code, _ in fences(lesson_body(1, lang)) if language == "pbtxt" and not role
    ]
    assert len(shown) == 1
    real = config.load_config(REPO / "classifier" / "config.pbtxt")
    assert config.parse_config(shown[0]) == real


@pytest.mark.parametrize("lang", L.LANGS)
def test_chapter2_example_keeps_the_step_models_tensor_names(lang):
    """Only the ensemble's tensors are renamed; every key is the step model's own tensor name."""
    (code,) = [c for language, role, c, _ in fences(lesson_body(2, lang)) if language == "pbtxt" and not role]
    cfg = config.parse_config(code)
    models = config.load_repository(REPO)
    assert cfg.name == "image_classifier"
    for step in cfg.ensemble_scheduling.step:
        step_cfg = models[step.model_name].config
        assert set(step.input_map) <= {t.name for t in step_cfg.input}, step.model_name
        assert set(step.output_map) <= {t.name for t in step_cfg.output}, step.model_name
    real = models["image_classifier"].config
    renamed = {t.name for t in cfg.input} | {t.name for t in cfg.output}
    assert renamed.isdisjoint({t.name for t in real.input} | {t.name for t in real.output}), "renames nothing"


# --- Triton's words ------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _known_triton_messages() -> tuple[str, ...]:
    msgs = []
    for case in sorted(CORPUS.glob("*/case.json")):
        message = json.loads(case.read_text(encoding="utf-8")).get("triton_message")
        if message:
            msgs.append(normalized(message))
    assert len(msgs) >= 30, "the Triton-verified corpus is missing"
    return tuple(msgs)


@lru_cache(maxsize=1)
def _repository_names() -> frozenset[str]:
    names = set()
    for name, entry in config.load_repository(REPO).items():
        names.add(name)
        cfg = entry.config
        tensors = [t.name for t in cfg.input] + [t.name for t in cfg.output]
        for step in cfg.ensemble_scheduling.step:
            tensors += [*step.input_map.values(), *step.output_map.values()]
        names |= {t for t in tensors if "_" in t}
    return frozenset(names)


def _as_pattern(quote: str) -> re.Pattern:
    wild = PLACEHOLDERS | _repository_names()
    parts = []
    for token in re.findall(r"[A-Za-z_][A-Za-z0-9_]*|\s+|.", quote):
        if token in wild:
            parts.append(r"[\w.<>/-]+")
        elif token.isspace():
            parts.append(r"\s+")
        else:
            parts.append(re.escape(token))
    return re.compile("".join(parts))


def _lesson_quotes(lang: str) -> list[tuple[int, str]]:
    return [
        (ch, normalized(q)) for ch in L.CHAPTERS for q in QUOTE.findall(FENCE.sub(" ", lesson_body(ch, lang)))
    ]


def _mistake_wordings(tmp_path: Path) -> list[str]:
    out = []
    for n, (_, _, _, _, code) in enumerate(pbtxt_blocks("mistake")):
        sub = tmp_path / f"m{n}"
        sub.mkdir()
        editor, _ = _checker_problems(code, sub)
        out += [normalized(p.triton_message) for p in editor if p.triton_message]
    return out


@pytest.mark.parametrize("lang", L.LANGS)
def test_every_quoted_triton_message_is_one_triton_gives(lang, tmp_path):
    quotes = _lesson_quotes(lang)
    assert len(quotes) >= 5
    known = _known_triton_messages() + tuple(_mistake_wordings(tmp_path))
    for chapter, quote in quotes:
        pattern = _as_pattern(quote)
        assert any(pattern.match(m) for m in known), f"{lang} ch{chapter}: Triton never says {quote!r}"


def test_quote_patterns_are_not_too_loose():
    known = _known_triton_messages()
    assert not any(_as_pattern("ensemble input 'E' for ensemble M' is not written").match(m) for m in known)
    assert any(_as_pattern("ensemble tensor 'x' is unused in ensemble 'E'").match(m) for m in known)


def test_both_languages_quote_the_same_messages():
    assert [q for _, q in _lesson_quotes("zh")] == [q for _, q in _lesson_quotes("en")]


# --- .proto messages -----------------------------------------------------------------------------


def test_proto_blocks_match_tritonclients_messages():
    field_re = re.compile(r"^\s*(?:repeated\s+|map<[^>]+>\s+|)[\w.]+\s+(\w+)\s*=\s*(\d+);", re.MULTILINE)
    seen = 0
    for lang in L.LANGS:
        for chapter in L.CHAPTERS:
            for language, _, code, _ in fences(lesson_body(chapter, lang)):
                if language != "protobuf":
                    continue
                name = re.search(r"message\s+(\w+)", code).group(1)
                descriptor = getattr(service_pb2, name).DESCRIPTOR
                fields = field_re.findall(code)
                assert fields, code
                for field, number in fields:
                    assert descriptor.fields_by_name[field].number == int(number), (lang, name, field)
                seen += 1
    assert seen >= 2


# --- terminology and wording ---------------------------------------------------------------------


def test_levels_and_tiers_are_not_called_stages():
    """DAG levels are 层 / level, cascade tiers are 级 / tier; 阶段 / stage names neither (stage_used is a tensor)."""
    for chapter in L.CHAPTERS:
        assert "阶段" not in lesson_body(chapter, "zh"), chapter
        assert not re.search(r"\bstages?\b", lesson_prose(chapter, "en"), re.IGNORECASE), chapter
    assert "level" in lesson_prose(2, "en") and "层" in lesson_prose(2, "zh")
    assert "tier" in lesson_prose(3, "en") and "第 1 级" in lesson_prose(3, "zh")


MISCONCEPTION = {"en": "> **Misconception: ", "zh": "> **常见误解："}


def test_every_chapter_corrects_a_misconception_where_it_arises():
    """A callout at the point of first contact in every chapter but 8 (common mistakes: each section is one),
    as many in zh as in en."""
    for chapter in L.CHAPTERS:
        counts = {lang: lesson_body(chapter, lang).count(MISCONCEPTION[lang]) for lang in L.LANGS}
        assert counts["zh"] == counts["en"], (chapter, counts)
        assert (counts["en"] >= 1) == (chapter != 8), (chapter, counts)


def test_test_time_augmentation_is_not_called_two_tower():
    zh, en = lesson_body(3, "zh"), lesson_body(3, "en")
    assert "## 2. 并行分支\n" in zh and "## 2. Parallel branches\n" in en
    for m in re.finditer("双塔", zh):  # kept only for the real two-tower example: image and text encoders
        assert zh[m.end() : m.end() + 10].startswith("模型（图像编码器"), zh[m.start() - 20 : m.end() + 20]


def test_reviewed_sentences_say_the_right_thing():
    zh1, en1 = lesson_prose(1, "zh"), lesson_prose(1, "en")
    assert "算一批 8 张的耗时，远远不到单张的 8 倍" in zh1 and "8 次单张的 8 倍" not in zh1  # batching
    for text in (zh1, en1):  # the app's own control mode, and why
        assert "--model-control-mode=explicit" in text and "/v2/repository/models/classifier/load" in text
    # preferred batch sizes: Triton's own advice, quoted
    assert "should not be used for most models" in en1 and "should not be used for most models" in zh1
    for lang in L.LANGS:
        # an unused ensemble tensor fails at load time; a browser page needs a same-origin gateway
        assert "ensemble tensor 'x' is unused in ensemble 'E'" in lesson_prose(2, lang)
        assert "proxy_buffering off" in lesson_prose(6, lang) and "CORS" in lesson_prose(6, lang)
        assert "text_input" in lesson_prose(6, lang) and "provisional" in lesson_prose(
            6, lang
        )  # the generate extension
    assert "not call for call" in lesson_prose(5, "en") and "并非一一对应" in lesson_prose(
        5, "zh"
    )  # HTTP vs gRPC


def test_the_app_really_runs_explicit_mode():
    from triton_kitchen.core import server

    source = Path(server.__file__).read_text(encoding="utf-8")
    assert '"--model-control-mode=explicit"' in source and '"--load-model=*"' in source


@pytest.mark.parametrize("lang", L.LANGS)
def test_figures_chapter1(lang):
    text = lesson_prose(1, lang)
    models = [p for p in REPO.iterdir() if (p / "config.pbtxt").is_file()]
    tree = next(code for language, _, code, _ in fences(lesson_body(1, lang)) if language == "text")
    listed = re.findall(r"── (\w+)/", tree)
    abridged = (
        f"{len(listed)} of our {len(models)} models"
        if lang == "en"
        else f"{len(models)} 个模型中的 {len(listed)} 个"
    )
    assert abridged in text
    assert all((REPO / name / "config.pbtxt").is_file() for name in listed)
    from triton_kitchen.core.endpoint import DEFAULT_PORTS

    for port in DEFAULT_PORTS.values():
        assert str(port) in text
    mbs = config.load_config(REPO / "classifier" / "config.pbtxt").max_batch_size
    assert re.search(rf"1 (?:to|到) {mbs}\b", text)


@pytest.mark.parametrize("lang", L.LANGS)
def test_figures_chapter3(lang):
    text = lesson_prose(3, lang)
    levels = ensemble.build_dag("image_classifier", REPO).stages
    assert [len(level) for level in levels] == [1, 1, 1]
    assert re.search(r"1、2、3|1, 2, 3", text)
    rows = {r["tensor"]: r for r in repo.intermediate_memory("image_classifier", batch_size=8, in_flight=64)}
    per = rows["image_tensor"]["bytes_per_request"]
    assert per == 8 * 3 * 224 * 224 * 4 and f"{per:,}" in text
    assert f"{per / 1e6:.1f} MB" in text  # 4.8 MB
    in_flight = rows["image_tensor"]["bytes_in_flight"]
    assert "64" in text and "300 MB" in text and abs(in_flight / 1e6 - 300) / 300 < 0.05
    assert f"{1 * 3 * 224 * 224 * 4 / 1e6:.1f} MB" in text  # 0.6 MB per [1, 3, 224, 224]
    bls = config.load_config(REPO / "cascade_bls" / "config.pbtxt")
    threshold = bls.parameters["confidence_threshold"].string_value
    assert (lang == "en" and f"threshold {threshold}" in text) or (
        lang == "zh" and f"阈值 {threshold}" in text
    )
    classifier = config.load_config(REPO / "classifier" / "config.pbtxt")
    assert [g.count for g in classifier.instance_group] == [1]  # "which has one instance"


def _chars_per_number(view: rv.HttpRequestView) -> np.ndarray:
    doc = view.json_text
    start = doc.index('"data":[') + len('"data":[')
    return np.array([len(x) for x in doc[start : doc.index("]", start)].split(",")])


@pytest.mark.parametrize("lang", L.LANGS)
def test_figures_chapter4_binary_request(lang):
    text, body = lesson_prose(4, lang), lesson_body(4, lang)
    noise = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
    view = rv.http_request("ensemble_pipeline", [rv.Tensor("input_image", noise, "FP32")], ["output_label"])
    assert view.json_size == 186 and f"Inference-Header-Content-Length: {view.json_size}" in body
    assert view.binary_size == 602_112 and f"{view.binary_size:,}" in text
    shown = next(code for language, _, code, _ in fences(body) if language == "http")
    json_part = shown.split("\n\n", 1)[1].split("<")[0]
    assert "".join(json_part.split()) == view.json_text  # the wrapped block is the real header
    assert f"{noise.size:,}" in body  # 150,528 numbers


@lru_cache(maxsize=1)
def _json_measurements() -> dict[str, list]:
    """tritonclient's own serialization (binary_data=False vs True) of the tutorial's noise (three draws of
    np.random.rand) and of every sample photo the pages offer: characters per number, bodies, ratios."""
    outputs = ["output_label"]
    cases = [
        (
            "noise",
            [
                rv.Tensor(
                    "input_image",
                    np.random.default_rng(seed).random((1, 3, 224, 224), dtype=np.float32),
                    "FP32",
                )
            ],
        )
        for seed in range(3)
    ]
    cases += [("photo", rv.request_inputs("ensemble_pipeline", sample_jpeg(name))) for name in SAMPLE_PHOTOS]
    out: dict[str, list] = {"noise": [], "photo": []}
    for kind, tensors in cases:
        plain = rv.http_request("ensemble_pipeline", tensors, outputs, binary=False)
        binary = rv.http_request("ensemble_pipeline", tensors, outputs, binary=True)
        chars = _chars_per_number(plain)
        out[kind].append((chars.mean(), chars.max(), plain.body_size, plain.body_size / binary.body_size))
    return out


@pytest.mark.parametrize("lang", L.LANGS)
def test_figures_chapter4_json_inflation(lang):
    """Characters per number and body sizes, measured with tritonclient's own serialization."""
    text = lesson_prose(4, lang)
    m = _json_measurements()
    for mean, biggest, body, ratio in m["noise"]:
        assert round(mean) == 18 and biggest <= 22  # "about 18 characters plus a comma"
        assert round(body / 1e6, 1) == 2.9 and round(ratio, 1) == 4.8
    for mean, _, body, ratio in m["photo"]:
        assert abs(mean - 8.5) <= 0.5 and 1.4e6 <= body <= 1.5e6 and abs(ratio - 2.4) <= 0.1
    assert re.search(r"\b18\b", text) and "8.5" in text
    assert "2.9 MB" in text and "×4.8" in text and "1.4–1.5 MB" in text and "×2.4" in text
    widened = repr(np.float32(0.1).item())
    assert widened == "0.10000000149011612" and widened in text


@pytest.mark.parametrize("lang", L.LANGS)
def test_figures_chapter5_grpc_envelope(lang):
    text = lesson_prose(5, lang)
    noise = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
    view = rv.grpc_request("ensemble_pipeline", [rv.Tensor("input_image", noise, "FP32")], ["output_label"])
    assert view.tensor_bytes == 602_112 and "602,112" in text
    assert 24 <= view.envelope_bytes < 100, view.envelope_bytes  # "a few dozen bytes"
    assert "few dozen" in text or "几十个字节" in text
    m = _json_measurements()  # "a JSON body is 4.8 times the raw one for noise and 2.4 times for a photo"
    assert {round(r, 1) for *_, r in m["noise"]} == {4.8} and all(abs(r - 2.4) <= 0.1 for *_, r in m["photo"])
    assert re.search(r"4\.8 (?:times|倍)", text) and re.search(r"2\.4 (?:times|倍)", text)


@pytest.mark.parametrize("lang", L.LANGS)
def test_figures_chapter7(lang):
    text = lesson_prose(7, lang)
    dag = ensemble.build_dag("ensemble_pipeline", REPO)
    assert [s.model for s in dag.steps] == ["classifier", "postprocess"]
    assert (
        ("two steps" in text and "not two" in text)
        if lang == "en"
        else ("两个步骤" in text and "而不是两趟" in text)
    )
    intermediates = [t.name for t in dag.tensors if t.kind == "intermediate"]
    assert intermediates == ["raw_logits"] and "`raw_logits`" in lesson_body(7, lang)
    assert "602,112" in text


@pytest.mark.parametrize("lang", L.LANGS)
def test_figures_chapter8(lang):
    text = lesson_prose(8, lang)
    mistakes = re.findall(r"\*\*(\d)\. ", lesson_body(8, lang))
    assert mistakes == [str(i) for i in range(1, 7)]
    assert ("Six mistakes" in lesson_body(8, lang)) if lang == "en" else ("六个误区" in lesson_body(8, lang))
    assert "4.8 MB" in text and "300 MB" in text
