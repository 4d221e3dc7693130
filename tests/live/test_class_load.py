"""benchmarks/class_load.py still drives the real app: two students open chapter 1, open its quiz's box, answer
two questions, and every click finds its widget, comes back answered and lands in the class database; in
``--lockstep`` they also predict and send a photo (chapter 1's send button) together; in ``--paced`` three
students work through chapter 1 for 20 s while one of them runs the protocol lab's load test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_class_load_two_students_find_and_record_every_click(server, tmp_path):
    out = tmp_path / "class_load.json"
    cmd = [
        sys.executable,
        "benchmarks/class_load.py",
        "--students=2",
        "--questions=2",
        "--no-lab",
        f"--url={server.http_url}",
        f"--grpc-url={server.grpc_url}",
        f"--metrics-url={server.metrics_url}",
        f"--json={out}",
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert out.exists(), done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["not_drawn"] == [], (
        f"the page no longer draws what the benchmark clicks: {result['not_drawn']}"
    )
    assert result["page_errors"] == [], result["page_errors"]
    assert result["answers_expected"] == 4
    assert result["answers_sent"] == result["answers_shown"] == 4, result  # every Check locked its question
    assert result["answers_in_database"] == 4 and result["answers_lost"] == 0, result
    assert result["students_in_database"] == 2
    assert result["quiz_click_s"]["max"] > 0
    assert done.returncode == 0, done.stdout + done.stderr


def test_class_load_lockstep_clicks_rerun_only_their_fragment(server, tmp_path):
    """``--lockstep`` with two students: every click of a step leaves within 50 ms of the others, the quiz's,
    the predict-first question's and the send button's clicks are sent as a browser sends them, inside their
    fragment (the id the page drew them in), and the app answers each with a run of that fragment, not of the
    whole page; each send draws its round trip, and each kind of click has its CPU seconds."""
    out = tmp_path / "class_load.json"
    cmd = [
        sys.executable,
        "benchmarks/class_load.py",
        "--lockstep",
        "--students=2",
        "--questions=2",
        f"--url={server.http_url}",
        f"--grpc-url={server.grpc_url}",
        f"--metrics-url={server.metrics_url}",
        f"--json={out}",
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert out.exists(), done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["mode"] == "lockstep"
    assert result["not_drawn"] == [] and result["page_errors"] == [], result
    assert result["answers_sent"] == result["answers_shown"] == result["answers_in_database"] == 4, result
    assert result["send_spread_ms"] <= 50, result
    # per student: the predict-first choice, each question's choice and Check, the send: all inside a fragment
    assert result["fragment_clicks"] == 2 * (1 + 2 * 2 + 1), (
        f"a click the benchmark sent outside any fragment: the page drew it outside one ({result})"
    )
    assert result["whole_page_reruns"] == [], (
        f"a click inside a fragment reran the whole page: {result['whole_page_reruns']}"
    )
    for kind in ("quiz_click_s", "choice_click_s", "predict_click_s", "lab_click_s"):
        assert result[kind]["max"] > 0, result
    assert result["lab_answers_shown"] == 2, f"a send click drew no round trip: {result}"
    assert all(result["cpu_s_per_click"][k] is not None for k in ("predict", "choice", "check", "lab")), (
        result
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_class_load_paced_run_finds_every_click(server, tmp_path):
    """``--paced`` for 20 s, three students thinking 0.3-1 s between clicks (enough to get through chapter 1's
    sections and some of its quiz), one of them running the protocol lab's load test in a second tab: every kind
    of click is found and answered, the lab run is kept for the class, nothing is lost."""
    out = tmp_path / "class_load.json"
    cmd = [
        sys.executable,
        "benchmarks/class_load.py",
        "--paced=0.34",
        "--students=3",
        "--lab-students=1",
        "--lab-seconds=2",
        "--lab-concurrency=1",
        "--think=0.3,1",
        f"--url={server.http_url}",
        f"--grpc-url={server.grpc_url}",
        f"--metrics-url={server.metrics_url}",
        f"--json={out}",
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.exists(), done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["mode"] == "paced"
    assert result["not_drawn"] == [], (
        f"the page no longer draws what the benchmark clicks: {result['not_drawn']}"
    )
    assert result["page_errors"] == [], result["page_errors"]
    # every kind of a reader's click was made and answered
    assert set(result["click_s_by_kind"]) >= {"box", "predict", "send", "choice", "check"}, result
    assert result["sends_shown"] >= 1, f"no send click drew its round trip: {result}"
    assert result["answers_sent"] == result["answers_shown"] == result["answers_in_database"] >= 1, result
    assert result["click_s"]["n"] == result["clicks"] and result["click_s"]["p99"] > 0, result
    # the lab tab found its button and its run finished and was kept for the class (not refused as busy)
    assert result["lab_runs_started"] >= 1 and result["lab_run_s"]["max"] > 0, result
    assert result["lab_runs_kept_on_page"] >= 1, f"no load run said it was kept for the class: {result}"
    assert result["lab_runs_in_database"] == result["lab_runs_kept_on_page"], result
    assert done.returncode == 0, done.stdout + done.stderr
