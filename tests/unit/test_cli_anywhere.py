"""The command line works from any folder, not only from the clone's root.

The package is installable (``pip install --no-deps -e .``, README and .ci/run) and finds its lessons, models and
data next to itself, never through the working directory. ``check`` on a repository given by an absolute path
from an unrelated folder must give the same verdict as from the clone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_is_installable_alone():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"
    # only the library: app.py, ui/, views/, tests/ and benchmarks/ are not packages to install
    assert project["tool"]["setuptools"]["packages"]["find"]["include"] == ["triton_kitchen*"]
    # the README's one install command installs it too: requirements.txt (and so requirements-dev.txt) ends with it
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert "-e ." in lines
    assert "-r requirements.txt" in (ROOT / "requirements-dev.txt").read_text()


def test_check_and_help_run_from_another_folder(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, "-m", "triton_kitchen", "check", str(ROOT / "model_repository")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "No module named triton_kitchen" not in run.stderr, (
        "triton_kitchen is not installed in this environment: run `pip install --no-deps -e .` (README, Install)"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "OK:" in run.stderr
    # the library's files are found next to the package, wherever the command runs
    probe = (
        "from triton_kitchen.core import lessons, server; "
        "print(lessons.LESSONS_DIR.is_dir(), server.DEFAULT_REPOSITORY.is_dir())"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["True", "True"], out.stderr
