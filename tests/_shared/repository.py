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
    "tiny_lm",
    "tiny_lm_ifb",
    "cache_drill",
    "warmup_drill",
    "running_sum",
    "running_sum_plain",
    "running_sum_ensemble",
    "running_sum_scale",
    "running_sum_step",
    "shapes_drill",
    "shapes_ragged",
    "shapes_bucket_short",
    "shapes_bucket_long",
}
# the drills' models: not loaded at the server's start, loaded when a drill first sends to them
LOADED_ON_FIRST_USE = {
    "cache_drill",
    "warmup_drill",
    "running_sum",
    "running_sum_plain",
    "running_sum_ensemble",
    "running_sum_scale",
    "running_sum_step",
    "shapes_drill",
    "shapes_ragged",
    "shapes_bucket_short",
    "shapes_bucket_long",
}
