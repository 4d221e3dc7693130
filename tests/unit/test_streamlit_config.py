"""The app's Streamlit settings that its correctness leans on."""

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCOPES = (
    ast.Module,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.With,
    ast.If,
    ast.For,
    ast.While,
    ast.Try,
)


def _magic_expressions(path: Path) -> list[int]:
    """Lines of the bare expressions Streamlit's magic would draw (not calls, not docstrings)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, SCOPES):
            continue
        for i, stmt in enumerate(node.body):
            if not isinstance(stmt, ast.Expr) or isinstance(
                stmt.value, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom)
            ):
                continue
            docstring = (
                i == 0
                and isinstance(stmt.value, ast.Constant)
                and not isinstance(node, (ast.With, ast.If, ast.For, ast.While, ast.Try))
            )
            if not docstring:
                found.append(stmt.lineno)
    return found


def test_magic_is_off_and_no_page_needs_it():
    """Magic parses each page into AST objects on the script thread, which races another thread's ast.parse on
    Python 3.11 (a SystemError in CI); off, a page's bare expression would silently stop showing, so none has one."""
    runner = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["runner"]
    assert runner["magicEnabled"] is False
    pages = [ROOT / "app.py", *sorted((ROOT / "views").glob("*.py"))]
    assert len(pages) > 10
    assert {p.name: lines for p in pages if (lines := _magic_expressions(p))} == {}
