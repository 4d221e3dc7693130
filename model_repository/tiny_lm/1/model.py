"""Triton Python backend: the course's tiny language model; the config picks the scheduler (see serving.py)."""

import sys
from pathlib import Path

# The stub ignores PYTHONPATH: make the app's root (three levels up) importable for triton_kitchen.
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from triton_kitchen.models.tiny_lm.serving import TritonPythonModel  # noqa: E402

__all__ = ["TritonPythonModel"]
