"""README.md: its Chinese and English halves say the same things a newcomer needs."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_halves_agree_on_what_a_newcomer_needs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    zh, en = text.split("\n## English\n", 1)
    zh = zh.split("\n## 中文\n", 1)[1]
    assert zh.count("\n### ") == en.count("\n### ")
    assert zh.count("```") == en.count("```")
    for half in (zh, en):
        for fact in (
            "8501",
            "Network URL",
            "ufw allow 8501",
            "sslCertFile",
            "1.5 GB",
            "600 MB",
            "OK: ",
            "class_load.py",
            "docker-compose.gpu.yml",
            "×0.65",
        ):
            assert fact in half, fact
