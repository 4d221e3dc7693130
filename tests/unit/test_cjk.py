"""Chinese Markdown as the browser gets it (triton_kitchen.core.cjk): no soft break between Chinese characters,
no `**` that CommonMark leaves literal. Checked with markdown-it-py (CommonMark, as Streamlit's parser)
on the real lesson files, quiz banks and UI strings as the loader hands them out."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from triton_kitchen.core import cjk
from triton_kitchen.core import lessons as L

MD = MarkdownIt("commonmark").enable("table")
_CJK = cjk.IDEOGRAPHS + cjk.FULL_WIDTH
# a space between two Chinese characters, or beside a full-width mark (which has its own spacing; the lessons
# never put a space there). Curly quotes and dashes serve English as well: the lessons put a space beside
# them around English words on purpose (`或 “unused”`), so they are not in the check.
STRAY_SPACE = re.compile(
    f"[{cjk.IDEOGRAPHS}][ \u00a0]+[{cjk.IDEOGRAPHS}]|[{cjk.FULL_WIDTH}][ \u00a0]+\\S|\\S[ \u00a0]+[{cjk.FULL_WIDTH}]"
)
# `**`, or a `*` touching Chinese text: a delimiter CommonMark did not use (`Access-Control-*` is no defect)
LITERAL_EMPHASIS = re.compile(f"(?<=[{_CJK}])\\*+|\\*\\*+|\\*+(?=[{_CJK}])")
FIELD = re.compile(r"\{[A-Za-z_][^{}]*\}")


def rendered_text(markdown: str) -> str:
    """The text a browser shows for a Markdown string: a soft break is a space (as Chromium shows it),
    inline code and code blocks are masked, emphasis markers that CommonMark used are gone."""
    out = []
    for token in MD.parse(markdown):
        if token.type in ("fence", "code_block"):
            out.append("\u27e6code\u27e7\n")
        for child in token.children or ():
            if child.type == "text":
                out.append(child.content)
            elif child.type == "softbreak":
                out.append(" ")
            elif child.type == "hardbreak":
                out.append("\n")
            elif child.type == "code_inline":
                out.append("\u27e6code\u27e7")
        if token.type.endswith("_close"):
            out.append("\n")
    return "".join(out)


def defects(markdown: str) -> list[str]:
    """Literal emphasis markers and stray spaces in Chinese text, as rendered."""
    text = rendered_text(markdown)
    found = [f"*: {text[max(m.start() - 12, 0) : m.end() + 12]!r}" for m in LITERAL_EMPHASIS.finditer(text)]
    found += [f"space: {text[max(m.start() - 8, 0) : m.end() + 8]!r}" for m in STRAY_SPACE.finditer(text)]
    return found


def _zh_texts(normalized: bool) -> dict[str, str]:
    """Every zh Markdown text the app shows: lesson bodies, titles and summaries, quiz text, UI strings
    (their fields filled with a number, as on the page). ``normalized``: as the loader hands them out."""
    texts: dict[str, str] = {}
    for ch in L.CHAPTERS:
        lesson = L.load_lesson(ch, "zh")
        if normalized:
            meta, body = {"title": lesson.title, "summary": lesson.summary}, lesson.body
        else:
            meta, body = L.parse_front_matter(L.lesson_path(ch, "zh").read_text(encoding="utf-8"))
        texts[f"lesson {ch}"] = body
        texts[f"lesson {ch} title"] = meta["title"]
        texts[f"lesson {ch} summary"] = meta["summary"]
        if normalized:
            questions = [(q.id, [q.prompt, *q.choices, q.explanation, *q.why]) for q in L.load_quiz(ch, "zh")]
        else:
            bank = L._read_toml(L.quiz_path(ch, "zh"), "quiz bank")
            questions = [
                (q["id"], [q["prompt"], *q["choices"], q["explanation"], *q.get("why", ())])
                for q in bank.get("question", [])
            ]
        for qid, parts in questions:
            for n, part in enumerate(parts):
                texts[f"quiz {ch} {qid} #{n}"] = part
    if normalized:
        table = L.ui_strings("zh")
    else:
        table = L._flatten(L._read_toml(L.LESSONS_DIR / "zh" / "ui.toml", "UI string table"))
    for key, template in table.items():
        texts[f"ui {key}"] = FIELD.sub("0", template)
    return texts


def test_zh_text_renders_without_stray_spaces_or_asterisks():
    found = {name: d for name, text in _zh_texts(normalized=True).items() if (d := defects(text))}
    assert not found, f"{sum(map(len, found.values()))} defects: {found}"


def _letters(text: str) -> str:
    return re.sub(r"[\s*]", "", text)


def test_normalisation_moves_only_spaces_breaks_and_asterisks():
    """Same characters in the same order, once whitespace and asterisks are set aside; code blocks
    byte for byte; English untouched by the loader; a second pass changes nothing."""
    raw, normalized = _zh_texts(normalized=False), _zh_texts(normalized=True)
    assert raw.keys() == normalized.keys()
    for name in raw:
        assert _letters(raw[name]) == _letters(normalized[name]), name
        assert cjk.normalize(normalized[name]) == normalized[name], name
        fences = [t.content for t in MD.parse(raw[name]) if t.type == "fence"]
        assert fences == [t.content for t in MD.parse(normalized[name]) if t.type == "fence"], name
    for ch in L.CHAPTERS:
        meta, body = L.parse_front_matter(L.lesson_path(ch, "en").read_text(encoding="utf-8"))
        assert L.load_lesson(ch, "en").body == body


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("楼层之间传递的是张量：\n一张图片", "楼层之间传递的是张量：一张图片"),  # full-width mark
        ("它就看看哪些步骤\n然后启动它们", "它就看看哪些步骤然后启动它们"),  # two ideographs
        ("普通的\n`ModelInfer`", "普通的\n`ModelInfer`"),  # ideograph | code: the lessons put a space there
        ("来自 Triton\n对你发出的请求", "来自 Triton\n对你发出的请求"),  # Latin | ideograph: likewise
        ("只有 `classifier` →\n`postprocess`：", "只有 `classifier` →\n`postprocess`："),
        ("（`x`）\n和客户端", "（`x`）和客户端"),
        ("- 第一项，\n  续行", "- 第一项，续行"),  # a list item's continuation
        ("第一段。\n\n第二段", "第一段。\n\n第二段"),  # blank line
        ("第一段。\n- 列表", "第一段。\n- 列表"),  # a list item starts
        ("第一段。\n1. 列表", "第一段。\n1. 列表"),
        ("## 标题\n正文", "## 标题\n正文"),  # heading
        ("| 列 | 列 |\n|---|---|\n| 中 | 文 |", "| 列 | 列 |\n|---|---|\n| 中 | 文 |"),  # table
        ("中文\n<!-- section: x -->\n中文", "中文\n<!-- section: x -->\n中文"),  # section marker
        ("硬换行。  \n下一行", "硬换行。  \n下一行"),  # hard break
        (
            "代码：\n```python\nx = 1  # 中文\n# 注释\n```\n之后",
            "代码：\n```python\nx = 1  # 中文\n# 注释\n```\n之后",
        ),
        ("English line\nnext line", "English line\nnext line"),
    ],
)
def test_join_soft_breaks(source, expected):
    assert cjk.join_soft_breaks(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # as chapter 3 once had it: closing ** after 。 and before an ideograph
        ("天花板：**ensemble 不能根据数据分支。**只要", "天花板：**ensemble 不能根据数据分支**。只要"),
        ("是**「引用」**就", "是「**引用**」就"),  # opening ** before a full-width mark
        ("是**`code`**就", "是 **`code`** 就"),  # a code span cannot move: a space, as beside code anyway
        ("**规则：** 无论 `x`", "**规则**：无论 `x`"),  # a space after a full-width mark is a gap
        ("HTTP **二进制** 或 gRPC", "HTTP **二进制**或 gRPC"),
        ("*事实：* Triton 在", "*事实*：Triton 在"),
        ("*事实：* `tritonclient.http` 默认", "*事实：*`tritonclient.http` 默认"),
        ("**decoupled（解耦）** 模型", "**decoupled（解耦**）模型"),
        ("已经渲染的**粗体**没问题", "已经渲染的**粗体**没问题"),
        ("**1. “步骤严格按数组顺序执行。”**", "**1. “步骤严格按数组顺序执行。”**"),
        ("`a：** b` 与 `**kwargs`", "`a：** b` 与 `**kwargs`"),  # inside code: untouched
        ("8 * 3 * 224", "8 * 3 * 224"),  # a literal asterisk between spaces
    ],
)
def test_fix_emphasis(source, expected):
    assert defects(source) or source == expected  # each case but the good ones renders wrong as written
    result = cjk.normalize(source)
    assert result == expected
    assert not defects(result), result


def test_unbalanced_delimiters_are_left_alone():
    assert cjk.normalize("只有一个**不成对，*这里也是") == "只有一个**不成对，*这里也是"


def test_a_bold_line_followed_by_an_italic_line_does_not_merge_delimiters():
    """`…。**` + `*教程说：*` joined naively gives `。***教`: one run of three that renders nothing."""
    source = "**1. `input_map` 哪边是哪边。**\n*教程说：* key 是传送带上的张量。\n*事实：* 正好相反。"
    result = cjk.normalize(source)
    assert "***" not in result
    assert (
        rendered_text(result).strip()
        == "1. ⟦code⟧ 哪边是哪边。教程说：key 是传送带上的张量。事实：正好相反。"
    )
    assert cjk.join_soft_breaks("**粗**\n*斜*") == "**粗**\n*斜*"  # nothing can go between: the break stays


def test_template_fields_stay_whole():
    """UI strings are str.format templates: a field counts as a word and is never split."""
    assert (
        cjk.normalize("共 **{n}** 个，用时 **{ms:.1f}** 毫秒。", template=True)
        == "共 **{n}** 个，用时 **{ms:.1f}** 毫秒。"
    )
    assert cjk.normalize("结果：**{label}**。", template=True) == "结果：**{label}**。"
    assert L.placeholders(cjk.normalize("第 {tier} 级：\n{count} 次", template=True)) == {"tier", "count"}


def test_check_catches_what_chromium_shows():
    assert defects("中文\n中文")  # a soft break between ideographs renders as a space
    assert defects("**ensemble 不能根据数据分支。**只要")  # literal asterisks
    assert not defects("用 Triton 跑 `ensemble`。")
