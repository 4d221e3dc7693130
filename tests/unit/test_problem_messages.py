"""The checker's explanations: both languages from the string tables, steps counted from 1, the
"is the map reversed?" hint only where swapping helps, and the ch2 caption naming the diagram's
real colours.

Library tests need no server; the AppTest ones use the session's real Triton.

Here the tests that need no server, app or browser; the others: tests/live/test_problem_messages_live.py.
"""

from __future__ import annotations

import colorsys
import re
from pathlib import Path

import pytest

from triton_kitchen.cli.check import run_check
from triton_kitchen.core import lessons
from triton_kitchen.core.config import ConfigError, load_repository, parse_config
from triton_kitchen.core.ensemble import (
    build_dag,
    config_error_msg,
    validate_config_file,
    validate_model,
    validate_repository,
)
from triton_kitchen.tools import diagram
from triton_kitchen.tools import repository as repo

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "case.json").is_file())
CJK = re.compile(r"[\u4e00-\u9fff]")
# English explanation words that must not be left in a Chinese explanation (names and config
# words such as input_map, model_version or TYPE_FP32 may stay)
ENGLISH_PROSE = re.compile(
    r"\b(step \d|is not|which|reads|writes|cannot|does not|did you mean|neither|the key|each of|is never)\b"
)


def corpus_problems(case: str):
    ps = list(validate_repository(CORPUS / case))
    for cfg in sorted((CORPUS / case).glob("*/config.pbtxt")):
        ps += validate_config_file(cfg)
    return ps


def image_classifier() -> str:
    return (repo.DEFAULT_REPOSITORY / "image_classifier" / "config.pbtxt").read_text()


def edited(old: str, new: str) -> str:
    text = image_classifier()
    assert text.count(old) == 1, old
    return text.replace(old, new)


WRONG_KEY = ('key: "input" value: "image_tensor"', 'key: "pixels" value: "image_tensor"')
SWAPPED = ('key: "input" value: "image_tensor"', 'key: "image_tensor" value: "input"')
# a cycle: preprocess reads postprocess's output; its key is a real input of preprocess
CYCLE = (
    'input_map { key: "image_bytes" value: "image_bytes" }',
    'input_map { key: "image_bytes" value: "top5_labels" }',
)


# -- every explanation in zh and en ------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_corpus_explanations_in_both_languages(case):
    for p in corpus_problems(case):
        assert p.text("en") == p.message  # the CLI's English is the en table's
        zh = p.text("zh")
        assert zh != p.message and CJK.search(zh), (case, p.code, zh)
        assert not ENGLISH_PROSE.search(zh), (case, p.code, zh)
        for text in (zh, p.message):
            assert "problem." not in text and not re.search(r"\{\w+\}", text), (case, text)


def test_every_table_key_the_code_uses_exists():
    parts = sorted((ROOT / "triton_kitchen" / "core" / "ensemble").glob("*.py")) + [
        ROOT / "triton_kitchen" / "tools" / "repository.py"
    ]
    src = "".join(p.read_text() for p in parts)
    assert len(re.findall(r'(?<![\w.])msg\(\s*"(\w+)"', src)) > 40  # the rules are really in these files
    keys = set(re.findall(r'(?<![\w.])msg\(\s*"(\w+)"\s*[,)]', src)) | set(
        re.findall(r'_msg\(\s*"(\w+)"', src)
    )
    keys |= set(re.findall(r'"(cfg_\w+)"', src))
    keys |= {f"map_{k}_reversed" for k in ("input", "output")} | {
        f"map_key_is_{k}_name" for k in ("input", "output")
    }
    keys |= {"kind_input", "kind_output", "map_to_missing_input", "map_from_missing_output"}
    assert len(keys) > 60
    for lang in lessons.LANGS:
        table = lessons.ui_strings(lang)
        missing = sorted(k for k in keys if f"problem.{k}" not in table)
        assert not missing, (lang, missing)


@pytest.mark.parametrize(
    "text",
    [
        'name: "e"\nmax_batch: 8\n',
        'name: "e"\ninput [ { name: "x" data_type: TYPE_FLOAT dims: [ 1 ] } ]\n',
        'name: "e"\nmax_batch_size: 8\nmax_batch_size: 4\n',
        'name: "e"\nmax_batch_size: eight\n',
        'name: "e"\nplatform: "ensemble"\ndynamic_batching { }\nensemble_scheduling { }\n',
        'name: "e"\ninput [ { name: "x" ',
        b'name: "\xff"\n',
    ],
)
def test_config_errors_translated_and_english_unchanged(text):
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    err = info.value
    msg = config_error_msg(err)
    assert msg.render("en") == err.message  # config.py's wording, byte for byte
    assert msg.key not in ("cfg_other", "cfg_syntax"), (err.code, err.message)
    zh = msg.render("zh")
    assert CJK.search(zh) and not ENGLISH_PROSE.search(zh), zh


def test_other_parser_errors_are_quoted_as_the_parsers_words():
    with pytest.raises(ConfigError) as info:
        parse_config('name: "e"\ninput [ { name: "x" } ] }\n')
    msg = config_error_msg(info.value)
    assert msg.render("en") == info.value.message
    assert msg.render("zh") == f"语法错误（protobuf 解析器原话）：{info.value.message}"


@pytest.mark.parametrize("change", [WRONG_KEY, SWAPPED, CYCLE])
def test_editor_check_follows_the_language(change):
    text = edited(*change)
    zh = repo.check_ensemble_text(text, lang="zh").problems
    en = repo.check_ensemble_text(text, lang="en").problems
    assert zh and len(zh) == len(en)
    for z, e in zip(zh, en, strict=True):
        assert CJK.search(z.message) and not ENGLISH_PROSE.search(z.message), z.message
        assert not CJK.search(e.message)
        assert z.triton_message == e.triton_message  # Triton's words are never translated


def test_editor_wrong_key_explained_in_chinese():
    [p] = repo.check_ensemble_text(edited(*WRONG_KEY), lang="zh").problems
    assert p.message.startswith("第 2 步（classifier）：input_map 的 key 'pixels' 不是 classifier 的输入")
    assert p.triton_message.startswith(
        "in ensemble image_classifier, ensemble tensor image_tensor is mapping to"
    )


# -- steps counted from 1, like the DAG's step table ------------------------------------

STEP_REF = re.compile(r"step (\d+) \(([^)]+)\)")


@pytest.mark.parametrize("case", CASES)
def test_step_numbers_count_from_one(case):
    """Every "step N (model)" names the N-th step of that model's config (1 = the first)."""
    repository = load_repository(CORPUS / case)
    for p in validate_repository(CORPUS / case):
        assert "step 0" not in p.message and "第 0 步" not in p.text("zh"), p.message
        cfg = repository[p.model].config
        for n, model in STEP_REF.findall(p.message):
            assert cfg.ensemble_scheduling.step[int(n) - 1].model_name == model, (case, p.message)


def test_step_numbers_match_the_steps_table_and_cli(capsys):
    text = edited(*WRONG_KEY)
    [p] = repo.check_ensemble_text(text, lang="en").problems
    rows = repo.ensemble_steps(parse_config(text))
    n = next(r["step"] for r in rows if r["model_name"] == "classifier")
    assert n == 2 and p.message.startswith(f"step {n} (classifier):")
    assert run_check([str(CORPUS / "cycle_three_steps" / "ens" / "config.pbtxt")]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert re.fullmatch(
        r".*cycle_three_steps/ens/config\.pbtxt:\d+: error: cycle: step 1 \(a\) --x--> step 2 \(b\) --y--> "
        r"step 3 \(c\) --z--> step 1 \(a\); each of these steps waits for an output of another, so none of them "
        r"ever runs",
        line,
    ), line


def test_triton_zero_based_step_is_flagged():
    text = edited(
        'output_map { key: "logits" value: "logits" }', 'output_map { key: "logits" value: "image_tensor" }'
    )
    for lang, note in (("en", "counts steps from 0"), ("zh", "从 0 开始编号")):
        p = next(
            p for p in repo.check_ensemble_text(text, lang=lang).problems if p.code == "tensor_written_twice"
        )
        assert "step 1" in p.triton_message and note in p.message


# -- the swap hint only where swapping helps -----------------------------------------


def test_no_swap_hint_when_the_key_is_a_real_input():
    for lang, word in (("en", "reversed"), ("zh", "写反")):
        problems = repo.check_ensemble_text(edited(*CYCLE), lang=lang).problems
        assert any(p.code == "cycle" for p in problems)
        assert not any(word in p.message for p in problems), [p.message for p in problems]


def test_swap_hint_when_swapping_fixes_it():
    problems = repo.check_ensemble_text(edited(*SWAPPED), lang="en").problems
    hinted = [p for p in problems if "reversed" in p.message]
    assert hinted and all('input_map { key: "input" value: "image_tensor" }' in p.message for p in hinted)
    err = next(
        p for p in validate_model("ens", load_repository(CORPUS / "map_reversed")) if p.code == "unused_input"
    )
    assert 'is the map reversed? (input_map { key: "INPUT" value: "IN" })' in err.message
    assert err.params["reversed_in_step"] == 0


def test_no_swap_hint_without_the_step_models():
    for p in validate_config_file(CORPUS / "map_reversed" / "ens" / "config.pbtxt"):
        assert "reversed" not in p.message


# -- the caption names the diagram's colours; levels, not stages --------


def _hue(hex_colour: str) -> float:
    r, g, b = (int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hsv(r, g, b)[0] * 360


HUES = {"red": (-20, 15), "orange": (15, 45), "green": (75, 165), "blue": (190, 250), "purple": (250, 300)}


def test_colour_names_match_the_fills():
    for kind, name in diagram.COLOR_NAMES.items():
        hue = _hue(diagram.COLORS[kind])
        hue = hue - 360 if hue > 340 else hue
        low, high = HUES[name]
        assert low <= hue <= high, (kind, diagram.COLORS[kind], name, hue)
    dot = diagram.to_dot(build_dag("ens", CORPUS / "valid_chain"))
    assert '"in:IN" [label="input: IN' in dot and f'fillcolor="{diagram.COLORS["input"]}"' in dot
    assert f'fillcolor="{diagram.COLORS["step"]}"' in dot and f'fillcolor="{diagram.COLORS["output"]}"' in dot


@pytest.mark.parametrize("lang", lessons.LANGS)
def test_caption_takes_its_colours_from_the_diagram(lang):
    template = lessons.ui_strings(lang)["ch2.dag_caption"]
    assert {"input", "step", "output", "stuck"} <= lessons.placeholders(template)
    words = {w for lg in lessons.LANGS for w in diagram.colour_words(lg).values()}
    words |= {"yellow", "黄色"}
    assert not any(w in template for w in words), template  # no colour written by hand
    shown = lessons.t("ch2.dag_caption", lang, **diagram.colour_words(lang))
    io = {
        "zh": ("= ensemble 输入", "= 步骤", "= ensemble 输出"),
        "en": ("= ensemble inputs", "= steps", "= ensemble outputs"),
    }
    for kind, label in zip(("input", "step", "output"), io[lang], strict=True):
        assert f"{diagram.colour_words(lang)[kind]} {label}" in shown


def test_dag_levels_not_stages():
    dag = build_dag("image_classifier", repo.DEFAULT_REPOSITORY)
    assert "classifier\\nlatest · level 2" in diagram.to_dot(dag)
    zh = diagram.to_dot(dag, lang="zh")
    assert "第 2 层" in zh and "阶段" not in zh
    for lang, word in (("zh", "层"), ("en", "Levels")):
        assert word in lessons.t("ch8.m2_stages", lang)
        assert "阶段" not in lessons.t("ch8.m2_stages", lang)
