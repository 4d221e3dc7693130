"""ARCHITECTURE.md stays the map of the code as it is: every library and ui module is in it, and every file
path it names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


FLOORS = ("core", "tools", "labs", "cli")  # triton_kitchen/'s packages, bottom to top


def _entries(folder: Path):
    for path in sorted(folder.iterdir()):
        if path.name.startswith(("__", ".")):
            continue
        if path.is_dir() or path.suffix == ".py":
            yield path


def test_every_library_and_ui_module_is_on_the_map():
    missing = []
    folders = [ROOT / "ui", ROOT / "triton_kitchen", *(ROOT / "triton_kitchen" / f for f in FLOORS)]
    for folder in folders:
        for path in _entries(folder):
            name = f"{path.name}/" if path.is_dir() else path.name
            where = path.relative_to(ROOT).as_posix() + ("/" if path.is_dir() else "")
            if f"`{name}" not in TEXT and f"`{where}" not in TEXT:
                missing.append(where)
    assert missing == [], f"ARCHITECTURE.md does not say what these hold: {missing}"


def test_every_path_it_names_exists():
    named = set(re.findall(r"`((?:[\w.-]+/)+[\w.-]*)`", TEXT))
    named |= {m for m in re.findall(r"`([\w/.-]+\.(?:py|md|toml|txt|json|yml))`", TEXT) if "/" in m}
    # a path may be relative to the root, to the package it is listed under, or to a model's folder
    bases = [ROOT, ROOT / "triton_kitchen", *(ROOT / "triton_kitchen" / f for f in FLOORS), ROOT / "ui"]
    bases += list((ROOT / "model_repository").iterdir())
    placeholders = ("NN", "slug", "chN", "<", "*")
    absent = [
        p for p in sorted(named)
        if not any(h in p for h in placeholders) and not any((base / p).exists() for base in bases)
    ]  # fmt: skip
    assert absent == [], f"ARCHITECTURE.md names paths that do not exist: {absent}"


def _modules(*folders: str):
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_one_name_for_each_thing_no_module_getattr():
    """A module-level ``__getattr__`` keeps an old name alive beside the new one: one import path per thing."""
    found = [
        str(path.relative_to(ROOT))
        for path in _modules("triton_kitchen", "ui")
        if any(
            isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
            for node in ast.parse(path.read_text(encoding="utf-8")).body
        )
    ]
    assert found == [], f"a module-level __getattr__ (an old name kept alive): {found}"
