"""Helpers shared by tests/unit/test_inside.py and tests/live/test_inside_live.py."""

from __future__ import annotations

import json

from triton_kitchen.cli import main as cli


def run_trace_cli(capsys, *argv) -> tuple[int, dict, str]:
    rc = cli.main(["trace", *argv, "--json"])
    out, err = capsys.readouterr()
    return rc, json.loads(out), err  # exactly one JSON document on stdout
