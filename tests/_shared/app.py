"""Helpers shared by tests/unit/test_app.py and tests/live/test_app_live.py."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAPTER_PAGES = [
    "views/ch1_inference_server.py",
    "views/ch2_ensemble_config.py",
    "views/ch3_multi_model.py",
    "views/ch4_http.py",
    "views/ch5_grpc.py",
    "views/ch6_choosing_protocol.py",
    "views/ch7_python_client.py",
    "views/ch8_mistakes.py",
    "views/ch9_scheduler.py",
    "views/ch10_operations.py",
    "views/ch11_generation.py",
]
TIMEOUT = 60
