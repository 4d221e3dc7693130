"""Helpers shared by tests/unit/test_repository.py and tests/live/test_repository_live.py."""

from __future__ import annotations

EXPECTED = {
    "preprocess",
    "classifier",
    "classifier_coarse",
    "postprocess",
    "image_classifier",
    "ensemble_pipeline",
    "tta_ensemble",
    "cascade_ensemble",
    "cascade_bls",
    "cascade_select",
    "hflip",
    "fuse_logits",
    "second_opinion",
    "streamer",
    "cache_drill",
    "warmup_drill",
    "running_sum",
    "running_sum_plain",
    "shapes_drill",
    "shapes_ragged",
    "shapes_bucket_short",
    "shapes_bucket_long",
}
