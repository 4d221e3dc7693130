"""The tiers (tests/_tiers.py): a test's folder is its tier, and the fast tier's promise: under `-m "not live"`
nothing starts tritonserver, Chromium or streamlit, and a test that tries (in the test process or in a child Python)
fails the run, naming itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from _tier_guard.live_guard import _forbidden
from _tiers import FOLDER_MARKS, tier_folder

TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "argv, word",
    [
        (
            [sys.executable, "-m", "triton_kitchen.core._supervise", "log", "--", "/c/bin/tritonserver"],
            "triton_kitchen.core._supervise",
        ),
        (["/c/bin/tritonserver", "--model-repository=/r"], "tritonserver"),
        (["/usr/bin/chromium", "--headless"], "chromium"),
        ([sys.executable, "-m", "streamlit", "run", "app.py"], "streamlit"),
        (
            ["/v/site-packages/playwright/driver/node", "/v/site-packages/playwright/driver/package/cli.js"],
            "playwright",
        ),
        ([sys.executable, "-c", "import streamlit; print('tritonserver')"], None),
        ([sys.executable, "-m", "triton_kitchen", "check", "model_repository"], None),
        (["ruff", "check", "tests/live/test_streamlit_media.py"], None),
    ],
)
def test_guard_knows_live_programs(argv, word):
    assert _forbidden(argv) == word


def run_fast_tier(tmp_path: Path, body: str, *options: str) -> subprocess.CompletedProcess:
    """pytest -m "not live" on one test module in tmp_path, with this suite's tier plugin."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["_tiers"]\n')
    (tmp_path / "test_probe.py").write_text(textwrap.dedent(body))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not live", *options, str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "PYTHONPATH": str(TESTS)},
    )  # fmt: skip


@pytest.mark.parametrize("options", [(), ("-n", "2")], ids=["one-process", "two-workers"])
def test_a_server_start_in_an_unmarked_test_fails_the_run(tmp_path, options):
    # the start hides in a helper and swallows its error, as an app page showing an error box would; on two
    # workers (the README's fast tier) the worker that ran it is not the process whose exit status counts
    result = run_fast_tier(
        tmp_path,
        """
        import subprocess

        def start():
            try:
                subprocess.Popen(["/nowhere/bin/tritonserver", "--model-repository=x"])
            except Exception:
                pass

        def test_looks_offline():
            start()

        def test_beside_it(): ...
        """,
        *options,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAST TIER VIOLATION" in result.stdout and "test_looks_offline" in result.stdout, result.stdout


def test_a_start_in_a_child_python_fails_the_run_too(tmp_path):
    result = run_fast_tier(
        tmp_path,
        """
        import subprocess, sys

        def test_child_starts_streamlit():
            script = "import subprocess; subprocess.Popen([sys.executable, '-m', 'streamlit', 'run', 'x.py'])"
            subprocess.run([sys.executable, "-c", "import sys; " + script])
        """,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAST TIER VIOLATION" in result.stdout and "test_child_starts_streamlit" in result.stdout, (
        result.stdout
    )


@pytest.mark.parametrize(
    "path, folder",
    [
        ("unit/test_tensors.py", "unit"),
        ("live/test_trace_live.py", "live"),
        ("browser/test_browser.py", "browser"),
        ("test_loose.py", None),
        ("_shared/trace.py", None),
    ],
)
def test_the_folder_is_the_tier(path, folder):
    item = SimpleNamespace(path=TESTS / path)
    assert tier_folder(item) == folder
    if folder:
        assert (
            FOLDER_MARKS[folder] == {"unit": set(), "live": {"live"}, "browser": {"live", "browser"}}[folder]
        )
