"""ARCHITECTURE.md stays the map of the code as it is: every library and ui module is in it, and every file
path it names exists."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


# -- the import contract ---------------------------------------------------------------------------------------
PRODUCT = ("triton_kitchen", "ui", "views")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _product_files() -> list[Path]:
    return [*_modules(*PRODUCT), ROOT / "app.py"]


def _imports(path: Path, known: set[str]):
    """(imported module, names taken from it, line, at module level) for every import in ``path``, with
    ``from package import submodule`` resolved to the submodule."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno, id(node) in top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    yield sub, [], node.lineno, id(node) in top
                else:
                    yield base, [alias.name], node.lineno, id(node) in top


def _graph():
    files = _product_files()
    known = {_module_name(p) for p in files}
    return {_module_name(p): list(_imports(p, known)) for p in files}, known


def _floor(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "triton_kitchen":
        return parts[1] if len(parts) > 1 and parts[1] in FLOORS else "library"
    return parts[0]


def _within(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _lab_of(module: str) -> str | None:
    parts = module.split(".")
    return ".".join(parts[:3]) if parts[:2] == ["triton_kitchen", "labs"] and len(parts) > 2 else None


def broken_rules(graph) -> list[str]:
    """Every import that goes against the floor plan, as ``module:line imports target (rule)``."""
    out = []
    for module, imports in graph.items():
        floor = _floor(module)
        for target, names, line, _ in imports:
            where = f"{module}:{line} imports {target}"
            if module.startswith("triton_kitchen") and _within(target, "streamlit", "ui", "views"):
                out.append(f"{where} (the library never imports streamlit, ui or views)")
            if floor == "ui" and _within(target, "views"):
                out.append(f"{where} (ui never imports views)")
            if floor == "core" and _within(
                target, *(f"triton_kitchen.{f}" for f in ("tools", "labs", "cli"))
            ):
                out.append(f"{where} (core imports nothing above it)")
            if floor == "tools" and _within(target, "triton_kitchen.labs", "triton_kitchen.cli"):
                out.append(f"{where} (tools never import a lab or the cli)")
            if floor == "labs" and _within(target, "triton_kitchen.cli"):
                out.append(f"{where} (a lab never imports the cli)")
            lab, other = _lab_of(module), _lab_of(target)
            if lab and other and other != lab:
                out.append(f"{where} (a lab never imports another lab)")
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and _within(target, *PRODUCT) and target != module:
                out.append(f"{where} {private} (a private name, imported across modules)")
    return out


def test_imports_follow_the_floor_plan():
    graph, _ = _graph()
    assert broken_rules(graph) == []


def test_the_rule_sees_a_lab_importing_a_lab():
    graph, _ = _graph()
    graph["triton_kitchen.labs.scheduling"].append(("triton_kitchen.labs.batching", [], 1, True))
    assert broken_rules(graph) == [
        "triton_kitchen.labs.scheduling:1 imports triton_kitchen.labs.batching (a lab never imports another lab)"
    ]


def test_no_import_cycle_even_through_a_function_local_import():
    """A function-local import may defer a heavy module, never hide a circle: the product's import graph,
    function-local imports included, has no cycle."""
    graph, known = _graph()
    edges = {m: {t for t, _, _, _ in imports if t in known and t != m} for m, imports in graph.items()}
    # importing a submodule runs its packages' __init__ first: a package's own __init__ does not count as an
    # edge back from its submodules
    for m in edges:
        edges[m] = {t for t in edges[m] if not m.startswith(t + ".")}
    order = list(graphlib.TopologicalSorter(edges).static_order())  # raises CycleError on a cycle
    assert len(order) == len(known)
