"""Logits -> probabilities and top-k labels (numpy only: the Python backend models import this too)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

LABELS_FILE = Path(__file__).resolve().parents[2] / "model_repository" / "classifier" / "labels.txt"


@lru_cache(maxsize=4)
def load_labels(path: str | Path = LABELS_FILE) -> tuple[str, ...]:
    """The 1000 ImageNet class names, in class-id order."""
    return tuple(Path(path).read_text(encoding="utf-8").splitlines())


def softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, numerically stable, FP32."""
    z = logits.astype(np.float32) - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def top_k(probs: np.ndarray, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the k largest entries along the last axis, best first."""
    idx = np.argsort(-probs, axis=-1, kind="stable")[..., :k]
    return idx, np.take_along_axis(probs, idx, axis=-1)


def confidence_threshold(model_config_json: str, default: float = 0.9) -> float:
    """The cascade's ``confidence_threshold`` parameter from a model's config (as Triton passes it)."""
    params = json.loads(model_config_json).get("parameters", {})
    return float(params.get("confidence_threshold", {}).get("string_value", default))


def confident(logits: np.ndarray, threshold: float) -> np.ndarray:
    """Per row: is the top softmax probability at least ``threshold``? (the cascade's early-exit test)"""
    return softmax(logits).max(axis=-1) >= threshold
