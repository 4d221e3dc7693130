"""The environment variables: one module reads them (``triton_kitchen.core.settings``), at each call, and the
README lists every one of them in both languages."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from triton_kitchen.core import settings as settings_module
from triton_kitchen.core.settings import Settings, settings, variables

ROOT = Path(__file__).resolve().parents[2]
NAMES = [v.env for v in variables()]

# (variable, value set, field, value read)
SET = [
    ("TRITON_HTTP_URL", " gpu-box:8000 ", "http_url", "gpu-box:8000"),
    ("TRITON_GRPC_URL", "gpu-box:8001", "grpc_url", "gpu-box:8001"),
    ("TRITON_METRICS_URL", "gpu-box:9102", "metrics_url", "gpu-box:9102"),
    ("TRITON_KITCHEN_LAB_WORKERS", " 3 ", "lab_workers", 3),
    ("TRITON_KITCHEN_CACHE", "/tmp/tk-cache", "cache", Path("/tmp/tk-cache")),
    ("TRITON_KITCHEN_DATABASE_URL", "postgresql://u@h/db", "database_url", "postgresql://u@h/db"),
    ("TRITON_KITCHEN_REPOSITORY_ROOT", "~/models", "repository_root", "~/models"),
    ("TRITON_KITCHEN_TEACHER_TOKEN", "s3cret", "teacher_token", "s3cret"),
    ("TRITON_KITCHEN_AUTO_RESTART", "Off", "auto_restart", False),
    ("TRITON_KITCHEN_LOG_LEVEL", "debug", "log_level", "DEBUG"),
    ("TRITON_KITCHEN_KEY", "k3y", "key", "k3y"),
]


@pytest.fixture
def clean_env(monkeypatch):
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_every_variable_is_a_field_with_a_name_default_and_meaning():
    assert [v.field for v in variables()] == [f for f in Settings.__dataclass_fields__]
    assert sorted(NAMES) == sorted(name for name, *_ in SET)
    assert len(set(NAMES)) == len(NAMES)
    for v in variables():
        assert v.env.startswith("TRITON_") and v.meaning.strip(), v
        assert getattr(settings_module, v.field.upper() + "_ENV", None) == v.env, v  # one constant per name


@pytest.mark.parametrize(("env", "raw", "field", "value"), SET)
def test_each_variable_is_read_into_its_field(clean_env, env, raw, field, value):
    clean_env.setenv(env, raw)
    assert getattr(settings(), field) == value


def test_defaults_when_nothing_is_set(clean_env):
    s = settings()
    assert (s.http_url, s.grpc_url, s.metrics_url) == ("", "", "")
    assert s.lab_workers == max(4, 4 * (os.cpu_count() or 1))
    assert s.cache == Path.home() / ".cache" / "triton-kitchen"
    assert (s.database_url, s.repository_root, s.teacher_token) == ("", "", "")
    assert s.auto_restart is True
    assert s.log_level == "INFO"
    assert s == Settings()


@pytest.mark.parametrize("env", NAMES)
def test_an_empty_variable_is_an_unset_one(clean_env, env):
    clean_env.setenv(env, "")
    assert settings() == Settings()


@pytest.mark.parametrize("raw", ["0", "-2", "four", "2.5"])
def test_lab_workers_not_a_positive_whole_number_is_the_default(clean_env, raw):
    clean_env.setenv("TRITON_KITCHEN_LAB_WORKERS", raw)
    assert settings().lab_workers == max(4, 4 * (os.cpu_count() or 1))


@pytest.mark.parametrize(
    ("raw", "on"), [("0", False), ("false", False), (" NO ", False), ("1", True), ("yes", True)]
)
def test_auto_restart_switch(clean_env, raw, on):
    clean_env.setenv("TRITON_KITCHEN_AUTO_RESTART", raw)
    assert settings().auto_restart is on


def test_read_at_each_call_never_cached(clean_env):
    assert settings().teacher_token == ""
    clean_env.setenv("TRITON_KITCHEN_TEACHER_TOKEN", "t1")
    assert settings().teacher_token == "t1"
    clean_env.setenv("TRITON_KITCHEN_TEACHER_TOKEN", "t2")
    assert settings().teacher_token == "t2"
    clean_env.delenv("TRITON_KITCHEN_TEACHER_TOKEN")
    assert settings().teacher_token == ""


def test_the_readers_see_a_changed_variable(clean_env, tmp_path):
    """Every module that used to read a variable itself now asks settings(): a change shows at the next call."""
    from triton_kitchen.classroom.store import default_url
    from triton_kitchen.core.budget import default_workers
    from triton_kitchen.core.endpoint import Endpoint
    from triton_kitchen.core.server import cache_root
    from triton_kitchen.tools.repository import repository_root

    assert Endpoint.from_env() is None
    clean_env.setenv("TRITON_HTTP_URL", "gpu-box")
    assert Endpoint.from_env() == Endpoint.remote("gpu-box:8000", "gpu-box:8001")
    clean_env.setenv("TRITON_METRICS_URL", "gpu-box:9102")
    assert Endpoint.from_env().metrics_url == "gpu-box:9102"
    clean_env.setenv("TRITON_KITCHEN_LAB_WORKERS", "5")
    assert default_workers() == 5
    clean_env.setenv("TRITON_KITCHEN_CACHE", str(tmp_path / "cache"))
    assert cache_root() == tmp_path / "cache" and cache_root().is_dir()
    assert default_url() == f"sqlite:///{tmp_path / 'cache' / 'classroom.db'}"
    clean_env.setenv("TRITON_KITCHEN_DATABASE_URL", "postgresql://u@h/db")
    assert default_url() == "postgresql://u@h/db"
    clean_env.setenv("TRITON_KITCHEN_REPOSITORY_ROOT", str(tmp_path))
    assert repository_root() == tmp_path.resolve()


# -- one reader ------------------------------------------------------------------------------------------------
def _environment_reads(tree: ast.AST) -> list[int]:
    """Lines that read one variable of the environment: ``os.environ.get(..)``, ``os.getenv(..)``,
    ``os.environ[..]`` (not as an assignment target), ``.. in os.environ``. Copying the whole environment for a
    child process (``dict(os.environ)``, ``os.environ.copy()``) is not a read of a variable."""

    def is_environ(node) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
            isinstance(node, ast.Name) and node.id == "environ"
        )

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "get" and is_environ(node.func.value):
                lines.append(node.lineno)
            elif node.func.attr == "getenv":
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getenv":
            lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and is_environ(node.value) and isinstance(node.ctx, ast.Load):
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            if any(is_environ(c) for c in node.comparators):
                lines.append(node.lineno)
    return sorted(lines)


def _product_files() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in ("triton_kitchen", "ui", "views"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


def test_no_module_but_settings_reads_the_environment():
    here = ROOT / "triton_kitchen" / "core" / "settings.py"
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in _product_files()
        if path != here
        for line in _environment_reads(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == [], f"read the environment through triton_kitchen.core.settings.settings(): {found}"


def test_the_rule_sees_each_kind_of_read():
    source = (
        "import os\nfrom os import environ, getenv\n"
        "a = os.environ.get('TRITON_HTTP_URL')\nb = os.getenv('X')\nc = os.environ['Y']\n"
        "d = 'Z' in os.environ\ne = environ.get('W')\nf = getenv('V')\n"
        "env = dict(os.environ)\nenv2 = os.environ.copy()\nos.environ['OK'] = '1'\ng = env.get('PATH')\n"
    )
    assert _environment_reads(ast.parse(source)) == [3, 4, 5, 6, 7, 8]


def test_the_readme_lists_every_variable_in_both_languages():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    zh, en = text.split("\n## English", 1)
    for half, lang in ((zh, "zh"), (en, "en")):
        missing = [name for name in NAMES if f"`{name}`" not in half]
        assert missing == [], f"README ({lang}) does not list {missing}"
