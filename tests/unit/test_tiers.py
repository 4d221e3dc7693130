"""The fast tier's promise: under `-m "not live"` nothing starts tritonserver, Chromium or streamlit, and a
test that tries (in the test process or in a child Python) fails the run, naming itself (tests/_tiers.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _tier_guard.live_guard import _forbidden

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


def test_live_tests_are_found_without_hand_marks(tmp_path):
    result = run_fast_tier(
        tmp_path,
        """
        import pytest

        @pytest.fixture
        def server():
            raise AssertionError("the fast tier must not set up a server")

        @pytest.fixture
        def remote(server):
            return server

        def open_page():
            from streamlit.testing.v1 import AppTest
            return AppTest.from_file

        def own_page():
            import streamlit as st
            st.write("no server here")

        def test_uses_server(server): ...
        def test_uses_it_through_a_fixture(remote): ...
        def test_runs_the_app(): open_page()
        def test_offline(): ...
        def test_own_small_page():
            from streamlit.testing.v1 import AppTest
            at = AppTest.from_function(own_page)
            at.run()
            assert not at.exception
        """,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed, 3 deselected" in result.stdout, result.stdout
