"""Model names come from one place, ``triton_kitchen/core/catalog.py``: the library, ``ui/`` and ``views/`` use its
constants, never a quoted name of a ``model_repository/`` folder."""

from __future__ import annotations

import ast
from pathlib import Path

from triton_kitchen.core import catalog

ROOT = Path(__file__).resolve().parents[2]
MODEL_FOLDERS = {
    p.name for p in (ROOT / "model_repository").iterdir() if p.is_dir() and not p.name.startswith(".")
}

# (file, literal) where the quoted name is deliberate
ALLOWED = {
    # the function preprocess() listed in __all__: a Python name that happens to equal the model's
    ("triton_kitchen/core/imaging.py", "preprocess"),
    # the labels file's folder; this module is imported inside Triton's Python backend (Python 3.10, numpy
    # only), where catalog (protobuf, tritonclient) cannot be imported
    ("triton_kitchen/core/postprocessing.py", "classifier"),
    # the ONNX builder names the folders it writes into; core/server.py imports it, and catalog imports
    # core/server.py, so importing catalog here would close a circle
    ("triton_kitchen/models/build.py", "classifier"),
    ("triton_kitchen/models/build.py", "classifier_coarse"),
}


def _files() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in ("triton_kitchen", "ui", "views"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return [f for f in files if f != ROOT / "triton_kitchen" / "core" / "catalog.py"]


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants (a docstring may name a model in prose)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def model_name_literals(path: Path) -> list[tuple[int, str]]:
    """(line, name) of each string constant in ``path`` that is exactly a model folder's name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in MODEL_FOLDERS
        and id(node) not in docs
    )


def test_every_model_folder_has_a_catalog_constant():
    constants = {v for k, v in vars(catalog).items() if k.isupper() and isinstance(v, str)}
    assert MODEL_FOLDERS <= constants, f"add a constant to catalog.py for {sorted(MODEL_FOLDERS - constants)}"
    assert set(catalog.COURSE_ORDER) == MODEL_FOLDERS


def test_model_names_only_from_the_catalog():
    found = []
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        for line, name in model_name_literals(path):
            if (rel, name) not in ALLOWED:
                found.append(f'{rel}:{line} "{name}" (use catalog.{name.upper()})')
    assert found == [], "a model name written as a string: " + "; ".join(found)


def test_the_allow_list_is_still_needed():
    """Each allowed literal is still there: an entry whose literal went goes from the list too."""
    present = {
        (path.relative_to(ROOT).as_posix(), name)
        for path in _files()
        for _, name in model_name_literals(path)
    }
    assert ALLOWED <= present, f"allowed but gone: {sorted(ALLOWED - present)}"


def test_the_rule_sees_a_quoted_name(tmp_path):
    sample = tmp_path / "lab.py"
    sample.write_text('"""Calls hflip."""\nMODEL = "hflip"\nOTHER = "hflip_v2"\nx = f"{MODEL}"\n')
    assert model_name_literals(sample) == [(2, "hflip")]
